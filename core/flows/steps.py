"""The built-in step types of contract section 6 and the lookup of plugin step types.

A step type has ``run(context, config)``, a coroutine receiving the rendered configuration and
returning the step's output; it raises :class:`StepFailed` (or anything else) to fail the step.
``prepare(config)`` may adjust the raw configuration before it is rendered; ``side_effects`` tells
the engine to checkpoint the execution after the step, so a resumed execution does not repeat it;
``never_waits`` (built-in types only) says ``run`` returns without awaiting anything, so the engine
arms no timeout around a step of light templates (none could fire).
"""

from __future__ import annotations

import asyncio
import codecs
import json
import zlib
from datetime import datetime, timedelta
from typing import Any

import aiohttp
import attrs

from patchbay.core.errors import DomainError
from patchbay.core.outbound import ResponseTooLarge, UnsafeTarget
from patchbay.core.timeutil import utcnow

#: Delays up to this many seconds are waited inline; longer ones park the execution durably.
INLINE_DELAY_SECONDS = 30.0


class StepFailed(Exception):
    """The step failed; the message is stored as the step's error."""


class Deferred(Exception):
    """The execution waits (a long delay, a ``wait`` step): it is stored ``waiting`` and resumed
    after ``seconds`` by a job due then."""

    def __init__(self, seconds: float, output: Any) -> None:
        super().__init__(f"deferred {seconds}s")
        self.seconds = seconds
        self.output = output


@attrs.define
class RunContext:
    """What a step sees: the services (``core.services.Services``), the tenant, the trigger payload
    and earlier steps' outputs."""

    services: Any
    workspace_id: str
    flow_id: str
    execution_id: str
    trigger: Any
    steps: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    test: bool = False
    #: the id of the step running now (one context per loop item: its steps run one after another)
    step_id: str = ""
    #: ``{item, index}`` inside a ``loop``, read by templates as ``loop``
    loop: Any = None
    #: how many ``call_flow`` steps deep this execution runs
    depth: int = 0
    #: shared by every context of one execution: ``response``, the first ``respond`` step's answer
    reply: dict[str, Any] = attrs.field(factory=dict)
    #: ``(rendered items, per-item results)`` by step id of the loops whose completed items a loop
    #: reuses: in a retry, those of the loop that failed in the execution retried (``loop_retry``);
    #: in a resumed execution, those its loop had completed before (``loop_progress``)
    earlier_loops: dict[str, tuple[list, list]] = attrs.field(factory=dict)

    def template_context(self) -> dict[str, Any]:
        if self.loop is None:
            return {"trigger": self.trigger, "steps": self.steps}
        return {"trigger": self.trigger, "steps": self.steps, "loop": self.loop}


def truthy(value: Any) -> bool:
    """A rendered condition as a boolean: text is false when blank or false-like (``false``, ``0``,
    ``no``, ``none``, ``null``)."""
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "0", "no", "none", "null")
    return bool(value)


def as_expression(value: Any) -> Any:
    """A condition written as a bare expression (``trigger.amount > 10``) as the template it means."""
    if isinstance(value, str) and "{{" not in value and "{%" not in value:
        return "{{ " + value + " }}"
    return value


def _require(config: dict[str, Any], *names: str) -> None:
    for name in names:
        if config.get(name) in (None, ""):
            raise StepFailed(f"'{name}' is required")


class Transform:
    side_effects = False
    never_waits = True

    async def run(self, context: RunContext, config: dict[str, Any]) -> Any:
        return config.get("output")


class Filter:
    side_effects = False
    never_waits = True

    def prepare(self, config: dict[str, Any]) -> dict[str, Any]:
        if "condition" in config:
            return {**config, "condition": as_expression(config["condition"])}
        return config

    async def run(self, context: RunContext, config: dict[str, Any]) -> Any:
        if "condition" not in config:
            raise StepFailed("'condition' is required")
        return {"passed": truthy(config["condition"])}


class Http:
    side_effects = True

    async def run(self, context: RunContext, config: dict[str, Any]) -> Any:
        _require(config, "url")
        method = str(config.get("method") or "GET").upper()
        url = str(config["url"])
        try:
            context.services.outbound.check(url)
        except UnsafeTarget as error:
            raise StepFailed(str(error)) from None
        headers = {str(k): str(v) for k, v in (config.get("headers") or {}).items()}
        headers.setdefault("Accept-Encoding", "identity")
        if not any(name.lower() == "idempotency-key" for name in headers):  # the same on a re-run after a crash
            headers["Idempotency-Key"] = f"{context.execution_id}:{context.step_id}"
        body = config.get("body")
        kwargs: dict[str, Any] = {"headers": headers}
        if body is not None:
            if isinstance(body, dict | list):
                # keys sorted: a re-run after a crash renders the body from stored outputs (JSONB
                # keeps no key order) and must send the same bytes under the same Idempotency-Key
                kwargs["data"] = aiohttp.JsonPayload(body, dumps=_sorted_json)
            else:
                kwargs["data"] = str(body)
        outbound = context.services.outbound
        try:
            async with outbound.session.request(method, url, **kwargs, **outbound.follow()) as response:
                text = _text(await outbound.read_body(response), response.charset)
                status = response.status
        except UnsafeTarget as error:  # a redirect hop or an address refused at connect time
            raise StepFailed(str(error)) from None
        except (ResponseTooLarge, zlib.error) as error:
            raise StepFailed(f"{method} {url}: {error}") from None
        try:
            parsed: Any = json.loads(text) if text.lstrip()[:1] in _JSON_STARTS else (text or None)
        except ValueError:
            parsed = text
        if not 200 <= status < 300:
            raise StepFailed(f"HTTP {status} from {method} {url}: {text[:500]}")
        return {"status": status, "body": parsed}


#: the first characters of a JSON text (``NaN``, ``Infinity`` as Python reads them); a body starting
#: otherwise is kept as text without a failed parse
_JSON_STARTS = frozenset('{["-0123456789tfnNI')


def _sorted_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _text(body: bytes, charset: str | None) -> str:
    try:
        codecs.lookup(charset or "utf-8")
    except LookupError:
        charset = None
    return body.decode(charset or "utf-8", "replace")


class ActionStep:
    side_effects = True

    async def run(self, context: RunContext, config: dict[str, Any]) -> Any:
        from patchbay.core.actions.service import run_action

        _require(config, "action", "connectionId")
        try:
            return await run_action(
                context.services,
                workspace_id=context.workspace_id,
                connection_id=str(config["connectionId"]),
                action_name=str(config["action"]),
                provider=config.get("provider"),
                inputs=config.get("inputs") or {},
            )
        except DomainError as error:  # no such action or connection, bad inputs, the plan's cap, the provider failed
            raise StepFailed(error.message) from None


def _row_json(row: Any) -> Any:
    if row is None or isinstance(row, dict):
        return row
    return {
        "id": getattr(row, "id", None),
        "external_key": getattr(row, "external_key", None),
        "data": getattr(row, "data", None),
    }


class TableUpsert:
    side_effects = True

    async def run(self, context: RunContext, config: dict[str, Any]) -> Any:
        from patchbay.core.tables.service import upsert_row

        _require(config, "table")
        data = config.get("data") or {}
        if not isinstance(data, dict):
            raise StepFailed("'data' must be an object")
        key = config.get("externalKey")
        async with context.services.flow_runner.step_sessions, context.services.db.transaction(tenant=context.workspace_id) as session:
            row = await upsert_row(
                session,
                workspace_id=context.workspace_id,
                table_slug=str(config["table"]),
                external_key=None if key is None else str(key),
                data=data,
            )
            return _row_json(row)


class TableLookup:
    """Concurrent executions' lookups are answered together (see ``FlowRunner.lookup``)."""

    side_effects = False

    async def run(self, context: RunContext, config: dict[str, Any]) -> Any:
        _require(config, "table", "column")
        return _row_json(await context.services.flow_runner.lookup(context.workspace_id, str(config["table"]), str(config["column"]), config.get("value")))


class Delay:
    side_effects = True

    async def run(self, context: RunContext, config: dict[str, Any]) -> Any:
        try:
            seconds = float(config.get("seconds") or 0)
        except (TypeError, ValueError):
            raise StepFailed("'seconds' must be a number") from None
        if seconds < 0:
            raise StepFailed("'seconds' must not be negative")
        if seconds > INLINE_DELAY_SECONDS:
            if context.test:
                return {"seconds": seconds, "waited": False}
            raise Deferred(seconds, {"seconds": seconds, "waited": True})
        await asyncio.sleep(seconds)
        return {"seconds": seconds, "waited": True}


#: the longest a ``wait`` step waits
MAX_WAIT_SECONDS = 366 * 86400.0


class Wait:
    """Wait ``seconds`` or until ``until``, durably: never in a task (see :class:`Deferred`). A
    test run does not wait; a time already past does not either."""

    side_effects = True

    async def run(self, context: RunContext, config: dict[str, Any]) -> Any:
        now = utcnow()
        if config.get("until") not in (None, ""):
            try:
                until = datetime.fromisoformat(str(config["until"]))
            except ValueError:
                raise StepFailed("'until' must be an ISO 8601 time") from None
            if until.tzinfo is None:
                raise StepFailed("'until' must carry an offset (e.g. Z or +02:00)")
            seconds = (until - now).total_seconds()
        else:
            try:
                seconds = float(config.get("seconds"))
            except (TypeError, ValueError):
                raise StepFailed("give 'seconds' (a number) or 'until'") from None
        if not 0 <= seconds <= MAX_WAIT_SECONDS and config.get("until") in (None, ""):
            raise StepFailed(f"'seconds' must be in [0, {MAX_WAIT_SECONDS:g}]")
        seconds = min(max(seconds, 0.0), MAX_WAIT_SECONDS)
        output = {"seconds": seconds, "resumeAt": (now + timedelta(seconds=seconds)).isoformat(), "waited": seconds > 0 and not context.test}
        if seconds <= 0 or context.test:
            return output
        raise Deferred(seconds, output)


BUILT_IN: dict[str, Any] = {
    "transform": Transform(),
    "filter": Filter(),
    "http": Http(),
    "action": ActionStep(),
    "table.upsert": TableUpsert(),
    "table.lookup": TableLookup(),
    "delay": Delay(),
    "wait": Wait(),
}


from patchbay.core.flows.steps_control import CONTROL_TYPES  # noqa: E402 - they build on the names above

BUILT_IN.update(CONTROL_TYPES)

from patchbay.core.flows.steps_approval import Approval  # noqa: E402 - it builds on the control steps

BUILT_IN["approval"] = Approval()


def step_type(registry: Any, name: str) -> Any | None:
    """The step type ``name``: built in, or registered by a plugin (``register_step_types``)."""
    return BUILT_IN.get(name) or registry.get("step_types", name)


def known_step_types(registry: Any) -> list[str]:
    return sorted({*BUILT_IN, *registry.objects("step_types")})
