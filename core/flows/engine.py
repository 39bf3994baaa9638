"""The flow engine: one code path for test runs, replays and live runs.

An execution is a row (``pending``) and a ``flows.execute`` job, created in one transaction by
whatever started it (a webhook event, a polled item, a schedule tick, a replay). The job marks the
execution ``running``, runs its steps in order and writes the outcome (``completed`` or ``failed``,
with the duration) together with every step's rendered input, output and error in one transaction;
the alerts of a live run are enqueued in that same transaction, so they are sent after the
execution ends and never block it.

Crash safety: steps with side effects (http, action, table.upsert, delay) are checkpointed as they
finish. When a process dies mid-execution its job's lease runs out and another worker claims the
job; the execution is still ``running``, its checkpointed steps are reused (not repeated) and the
rest run, so the execution ends completed or failed instead of staying stuck in ``running``. The
final write only succeeds while the execution is ``running``, so a duplicate delivery of the job
changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import Any

import attrs
from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.appkeys import DB, FLOW_VERSION_CACHE, JOBS
from patchbay.core.flows.models import FlowExecution, FlowExecutionStep, FlowVersion
from patchbay.core.flows.steps import Deferred, RunContext, StepFailed, step_type
from patchbay.core.flows.templating import TemplateFailure, render_value
from patchbay.core.jobs.queue import JobContext
from patchbay.core.timeutil import new_id, utcnow

log = logging.getLogger(__name__)

JOB_KIND = "flows.execute"
DEFAULT_STEP_TIMEOUT = 30.0
MAX_STEP_TIMEOUT = 300.0
_STEP_META_KEYS = ("id", "type", "name", "timeoutSeconds")
_VERSION_CACHE_SIZE = 2048


class InvalidSteps(ValueError):
    """The steps of a flow are malformed; the message names the step and the field."""


def validate_steps(app: Any, steps: Any) -> list[dict[str, Any]]:
    """Check a list of steps: objects with a unique string ``id`` and a known ``type``."""
    if not isinstance(steps, list):
        raise InvalidSteps("steps must be a list")
    seen: set[str] = set()
    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            raise InvalidSteps(f"steps[{index}] must be an object")
        step_id = step.get("id")
        if not isinstance(step_id, str) or not step_id:
            raise InvalidSteps(f"steps[{index}].id is required")
        if step_id in seen:
            raise InvalidSteps(f"steps[{index}].id {step_id!r} is used twice")
        seen.add(step_id)
        kind = step.get("type")
        if not isinstance(kind, str) or step_type(app, kind) is None:
            raise InvalidSteps(f"steps[{index}].type {kind!r} is not a known step type")
        timeout = step.get("timeoutSeconds")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_STEP_TIMEOUT):
            raise InvalidSteps(f"steps[{index}].timeoutSeconds must be a number in (0, {MAX_STEP_TIMEOUT:g}]")
    return steps


# ---------------------------------------------------------------------------------------------
# Running steps
# ---------------------------------------------------------------------------------------------


@attrs.define
class StepRecord:
    position: int
    step_id: str
    type: str
    status: str
    input: Any = None
    output: Any = None
    error: str | None = None
    started_at: Any = None
    finished_at: Any = None
    duration_ms: int | None = None
    written: bool = False

    def row(self, workspace_id: str, execution_id: str) -> dict[str, Any]:
        return {
            "id": new_id(), "workspace_id": workspace_id, "execution_id": execution_id, "position": self.position,
            "step_id": self.step_id, "type": self.type, "status": self.status, "input": self.input, "output": self.output,
            "error": self.error, "started_at": self.started_at, "finished_at": self.finished_at, "duration_ms": self.duration_ms,
        }  # fmt: skip


@attrs.define
class Outcome:
    status: str
    error: str | None
    records: list[StepRecord]


async def run_steps(app: Any, context: RunContext, steps: list[dict[str, Any]], done: dict[int, StepRecord], checkpoint=None) -> Outcome:
    """Run ``steps`` in order, reusing the records in ``done`` (a resumed execution).

    ``checkpoint(records)`` is awaited after each step with side effects. A failed step fails the
    execution; a filter that does not pass ends it as completed; later steps are recorded skipped.
    """
    records: list[StepRecord] = []
    status, error = "completed", None
    stopped = False
    for position, step in enumerate(steps):
        step_id, kind_name = str(step.get("id")), str(step.get("type"))
        if stopped:
            records.append(StepRecord(position, step_id, kind_name, "skipped"))
            continue
        previous = done.get(position)
        if previous is not None:
            records.append(previous)
            context.steps[step_id] = {"output": previous.output, "status": previous.status}
            if previous.status == "failed":
                status, error, stopped = "failed", previous.error, True
            elif kind_name == "filter" and isinstance(previous.output, dict) and not previous.output.get("passed", True):
                stopped = True
            continue
        record = StepRecord(position, step_id, kind_name, "completed", started_at=utcnow())
        began = time.perf_counter()
        kind = step_type(app, kind_name)
        raw = {key: value for key, value in step.items() if key not in _STEP_META_KEYS}
        record.input = raw
        deferred: Deferred | None = None
        try:
            if kind is None:
                raise StepFailed(f"unknown step type {kind_name!r}")
            prepare = getattr(kind, "prepare", None)
            config = render_value(prepare(raw) if prepare else raw, context.template_context())
            record.input = config
            timeout = float(step.get("timeoutSeconds") or DEFAULT_STEP_TIMEOUT)
            try:
                record.output = await asyncio.wait_for(kind.run(context, config), timeout)
            except TimeoutError:
                raise StepFailed(f"step timed out after {timeout:g}s") from None
        except Deferred as wait:
            deferred, record.output = wait, wait.output
        except (StepFailed, TemplateFailure) as failure:
            record.status, record.error = "failed", str(failure)
        except asyncio.CancelledError:
            raise
        except Exception as failure:  # a step type's own bug or an I/O error: the step fails
            message = getattr(failure, "message", None)  # an ApiError of a service (a missing table ...)
            record.status, record.error = "failed", message if isinstance(message, str) else f"{type(failure).__name__}: {failure}"
        record.finished_at = utcnow()
        record.duration_ms = int((time.perf_counter() - began) * 1000)
        records.append(record)
        context.steps[step_id] = {"output": record.output, "status": record.status}
        if deferred is not None:
            if checkpoint is not None:
                await checkpoint(records)
            raise deferred
        if record.status == "failed":
            status, error, stopped = "failed", f"step {step_id!r} failed: {record.error}", True
        elif kind_name == "filter" and isinstance(record.output, dict) and not record.output.get("passed"):
            stopped = True
        elif checkpoint is not None and getattr(kind, "side_effects", True):
            await checkpoint(records)
    return Outcome(status, error, records)


# ---------------------------------------------------------------------------------------------
# Executions in the database
# ---------------------------------------------------------------------------------------------


def _insert(app: Any):
    return postgresql.insert if app[DB].is_postgres else sqlite.insert


async def _write_records(app: Any, session: AsyncSession, workspace_id: str, execution_id: str, records: list[StepRecord]) -> None:
    rows = [record.row(workspace_id, execution_id) for record in records if not record.written]
    if not rows:
        return
    statement = _insert(app)(FlowExecutionStep).on_conflict_do_nothing(index_elements=["execution_id", "position"])
    await session.execute(statement, rows)
    for record in records:
        record.written = True


async def create_executions(app: Any, session: AsyncSession, rows: list[dict[str, Any]]) -> list[str]:
    """Insert executions (``pending``) and their jobs in ``session``'s transaction.

    Each row has ``workspace_id``, ``flow_id``, ``trigger_source``, ``trigger_payload`` and either
    ``version`` or ``steps``; an optional ``dedupe_key`` already used makes the row a no-op, which
    is how an event, item or tick starts a flow once. Answers the ids created."""
    if not rows:
        return []
    now = utcnow()
    values = [
        {"id": new_id(), "status": "pending", "attempts": 0, "created_at": now, "updated_at": now, "version": None, "steps": None,
         "dedupe_key": None, "subscription_id": None, "replay_of": None, "trigger_payload": None, **row}
        for row in rows
    ]  # fmt: skip
    statement = _insert(app)(FlowExecution).values(values).on_conflict_do_nothing(index_elements=["dedupe_key"]).returning(FlowExecution.id, FlowExecution.workspace_id)
    created = (await session.execute(statement)).all()
    by_workspace: dict[str, list[dict[str, Any]]] = {}
    for execution_id, workspace_id in created:
        by_workspace.setdefault(workspace_id, []).append({"executionId": execution_id})
    for workspace_id, payloads in by_workspace.items():
        await app[JOBS].enqueue_many(session, JOB_KIND, payloads, workspace_id=workspace_id)
    return [execution_id for execution_id, _ in created]


async def _version_steps(app: Any, flow_id: str, version: int) -> list[dict[str, Any]]:
    """A version's steps; snapshots never change, so they are cached per process."""
    cache: OrderedDict = app[FLOW_VERSION_CACHE]
    key = (flow_id, version)
    steps = cache.get(key)
    if steps is None:
        async with app[DB].session() as session:
            steps = await session.scalar(select(FlowVersion.steps).where(FlowVersion.flow_id == flow_id, FlowVersion.version == version))
        if steps is None:
            raise StepFailed(f"version {version} of flow {flow_id} does not exist")
        cache[key] = steps
        if len(cache) > _VERSION_CACHE_SIZE:
            cache.popitem(last=False)
    return steps


async def _finish(app: Any, execution: dict[str, Any], outcome: Outcome, *, alerts: bool) -> bool:
    """Write the outcome; False when another run already finished the execution."""
    from patchbay.core.alerts.service import enqueue_alerts

    finished = utcnow()
    started = execution["started_at"] or finished
    async with app[DB].transaction() as session:
        result = await session.execute(
            update(FlowExecution)
            .where(FlowExecution.id == execution["id"], FlowExecution.status == "running")
            .values(status=outcome.status, error=outcome.error, finished_at=finished, updated_at=finished,
                    duration_ms=int((finished - started).total_seconds() * 1000))  # fmt: skip
            .execution_options(synchronize_session=False)
        )
        if result.rowcount != 1:
            await session.rollback()
            return False
        await _write_records(app, session, execution["workspace_id"], execution["id"], outcome.records)
        if alerts:
            await enqueue_alerts(
                app, session, workspace_id=execution["workspace_id"], flow_id=execution["flow_id"],
                execution_id=execution["id"], status=outcome.status, error=outcome.error,
            )  # fmt: skip
    return True


_CLAIM_COLUMNS = (
    FlowExecution.id, FlowExecution.workspace_id, FlowExecution.flow_id, FlowExecution.version, FlowExecution.steps,
    FlowExecution.trigger_payload, FlowExecution.trigger_source, FlowExecution.attempts, FlowExecution.started_at,
)  # fmt: skip


async def _start(app: Any, execution_id: str) -> dict[str, Any] | None:
    """Mark the execution running (again, when resumed); None when it has already ended."""
    now = utcnow()
    async with app[DB].transaction() as session:
        row = (
            await session.execute(
                update(FlowExecution)
                .where(FlowExecution.id == execution_id, FlowExecution.status.in_(("pending", "running")))
                .values(status="running", attempts=FlowExecution.attempts + 1, updated_at=now)
                .returning(*_CLAIM_COLUMNS)
                .execution_options(synchronize_session=False)
            )
        ).mappings().first()
        if row is None:
            return None
        execution = dict(row)
        if execution["started_at"] is None:
            execution["started_at"] = now
            await session.execute(
                update(FlowExecution).where(FlowExecution.id == execution_id).values(started_at=now).execution_options(synchronize_session=False)
            )
    return execution


async def _done_records(app: Any, execution_id: str) -> dict[int, StepRecord]:
    async with app[DB].session() as session:
        rows = (await session.scalars(select(FlowExecutionStep).where(FlowExecutionStep.execution_id == execution_id))).all()
    return {
        row.position: StepRecord(row.position, row.step_id, row.type, row.status, row.input, row.output, row.error,
                                 row.started_at, row.finished_at, row.duration_ms, written=True)
        for row in rows if row.status in ("completed", "failed")
    }  # fmt: skip


async def run_execution(app: Any, execution_id: str) -> str | None:
    """Run (or resume) one execution to its end; answers its final status, or None when it had
    already ended or waits on a long delay."""
    execution = await _start(app, execution_id)
    if execution is None:
        return None
    workspace_id = execution["workspace_id"]
    done = await _done_records(app, execution_id) if execution["attempts"] > 1 else {}
    context = RunContext(app, workspace_id, execution["flow_id"], execution_id, execution["trigger_payload"], test=execution["trigger_source"] == "test")
    try:
        steps = execution["steps"] if execution["version"] is None else await _version_steps(app, execution["flow_id"], execution["version"])
    except StepFailed as error:
        await _finish(app, execution, Outcome("failed", str(error), []), alerts=not context.test)
        return "failed"

    async def checkpoint(records: list[StepRecord]) -> None:
        async with app[DB].transaction() as session:
            await _write_records(app, session, workspace_id, execution_id, records)

    try:
        outcome = await run_steps(app, context, steps or [], done, checkpoint)
    except Deferred as wait:
        async with app[DB].transaction() as session:
            app[JOBS].enqueue(session, JOB_KIND, {"executionId": execution_id}, delay=wait.seconds, workspace_id=workspace_id)
        return None
    await _finish(app, execution, outcome, alerts=not context.test)
    return outcome.status


async def execute_job(context: JobContext) -> None:
    await run_execution(context.app, context.payload["executionId"])


async def run_test(app: Any, *, workspace_id: str, flow_id: str, steps: list[dict[str, Any]], payload: Any) -> str:
    """``POST /flows/{id}/test``: record an execution of ``steps`` (source ``test``) and run it now,
    without alerts. Answers the execution id."""
    now = utcnow()
    execution_id = new_id()
    async with app[DB].transaction(tenant=workspace_id) as session:
        session.add(FlowExecution(id=execution_id, flow_id=flow_id, status="running", trigger_source="test", trigger_payload=payload,
                                  steps=steps, attempts=1, started_at=now))  # fmt: skip
    execution = {"id": execution_id, "workspace_id": workspace_id, "flow_id": flow_id, "started_at": now}
    context = RunContext(app, workspace_id, flow_id, execution_id, payload, test=True)
    outcome = await run_steps(app, context, steps, {})
    await _finish(app, execution, outcome, alerts=False)
    return execution_id

