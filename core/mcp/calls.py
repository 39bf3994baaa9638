"""Running one tool call for an MCP caller: the rate limits per token and per connection (``[mcp]
tool_calls_per_token`` and ``tool_calls_per_connection``; the provider calls a tool makes are held
besides to the proxy's per-connection limit, and an action tool to the plan's
``action_executions``), the approval gate, the call
itself through the same services the connect API uses (``run_action``, the proxy's ``send``, the
flow engine, the tables service), and one audit row per call in the proxy's audit log (with the
token's client and user). Every refusal or failure is a :class:`ToolOutcome` with ``is_error``:
the client gets a tool error carrying the message (the provider's, when it answered), never an
HTTP error.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

import attrs
from multidict import CIMultiDict

from patchbay.core.actions.inputs import check_inputs
from patchbay.core.actions.service import run_action
from patchbay.core.connections.store import load_state
from patchbay.core.errors import DomainError, Invalid, NotFound, RateLimited
from patchbay.core.flows.engine import JOB_KIND, run_steps
from patchbay.core.flows.models import Flow, FlowExecution
from patchbay.core.flows.runner import step_rows
from patchbay.core.flows.steps import Deferred, RunContext
from patchbay.core.http.errors import domain_status
from patchbay.core.mcp import approvals
from patchbay.core.mcp.tools import AgentTool
from patchbay.core.proxy.engine import send
from patchbay.core.ratelimit.limiter import parse_limit
from patchbay.core.tables import service as tables
from patchbay.core.timeutil import new_id, utcnow

if TYPE_CHECKING:
    from patchbay.core.mcp.access import McpAccess
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

#: the most of a provider's answer a proxy tool call hands back
MAX_PROXY_BODY = 1024 * 1024
#: the audit's ``source`` of a tool call (the provider calls it makes are logged as ``client``/``mcp``)
AUDIT_SOURCE = "mcp"


@attrs.frozen
class ToolOutcome:
    """What a tool call answers: JSON-able ``value`` (the structured content), or an error message."""

    value: Any = None
    error: str | None = None
    status: int = 200

    @property
    def is_error(self) -> bool:
        return self.error is not None


def _actor(access: McpAccess) -> str | None:
    grant = access.grant
    return grant.user_id or (f"end_user:{grant.end_user_id}" if grant.end_user_id else None)


async def _rate_limit(services: Services, access: McpAccess, tool: AgentTool) -> None:
    """:class:`RateLimited` (a tool error with status 429) past either limit."""
    settings = services.settings.mcp
    limits = [("token", f"mcp:grant:{access.grant.id}", settings.tool_calls_per_token)]
    if tool.connection_id:
        limits.append(("connection", f"mcp:connection:{tool.connection_id}", settings.tool_calls_per_connection))
    for what, key, value in limits:
        item = parse_limit(value)
        if item is None:
            continue
        decision = await services.rate_limiter.hit(key, item)
        if not decision.allowed:
            raise RateLimited(f"Too many tool calls for this {what}; retry in {decision.retry_after} s", retry_after=decision.retry_after)


async def call_tool(services: Services, access: McpAccess, tool: AgentTool, arguments: dict[str, Any], *, needs_approval: bool = False) -> ToolOutcome:
    """Run ``tool`` (one of the caller's grant) with ``arguments``, after an approver said yes
    when ``needs_approval``; logged whatever happens."""
    started = time.perf_counter()
    outcome = ToolOutcome(error="the call did not finish", status=500)
    try:
        await _rate_limit(services, access, tool)
        if needs_approval:
            request_id = await approvals.request_approval(services, access, tool, arguments)
            decision = await approvals.wait_for_decision(
                services, access.grant.workspace_id, request_id, timeout=services.settings.mcp.approval_timeout_seconds
            )
            if not decision.approved:
                outcome = ToolOutcome(error=f"Not approved (approval request {request_id}): {decision.note or 'denied by an approver'}", status=403)
                return outcome
        outcome = await _run(services, access, tool, arguments)
        return outcome
    except DomainError as refusal:
        outcome = ToolOutcome(error=refusal.message, status=domain_status(refusal))
        return outcome
    except Exception as error:  # a bug or an I/O failure below: the agent gets a tool error, the log the trace
        log.exception("MCP tool %s failed", tool.name)
        outcome = ToolOutcome(error=f"{tool.name} failed: {type(error).__name__}", status=500)
        return outcome
    finally:
        services.connections.audit.add(
            workspace_id=access.grant.workspace_id,
            connection_id=tool.connection_id or "",
            provider=tool.provider or tool.kind,
            source=AUDIT_SOURCE,
            method="TOOL",
            path=tool.name,
            status=outcome.status,
            duration_ms=(time.perf_counter() - started) * 1000,
            error=outcome.error,
            client_id=access.grant.client_id[:255],
            user_id=(_actor(access) or "")[:255] or None,
        )


async def _run(services: Services, access: McpAccess, tool: AgentTool, arguments: dict[str, Any]) -> ToolOutcome:
    workspace_id = access.grant.workspace_id
    if tool.kind == "action":
        result = await run_action(services, workspace_id=workspace_id, connection_id=tool.connection_id, action_name=tool.target, inputs=arguments)
        return ToolOutcome(value=result)
    if tool.kind == "proxy":
        return await _proxy(services, access, tool, arguments)
    if tool.kind == "flow":
        return await _flow(services, workspace_id, tool, arguments)
    if tool.kind == "table_lookup":
        arguments = check_inputs(tool.input_schema, arguments, "arguments")
        async with services.db.session(tenant=workspace_id) as session:
            row = await tables.lookup_row(
                session, workspace_id=workspace_id, table_slug=arguments["table"], column=arguments["column"], value=arguments["value"]
            )
        return ToolOutcome(value={"row": row})
    if tool.kind == "table_insert":
        arguments = check_inputs(tool.input_schema, arguments, "arguments")
        key = arguments.get("externalKey")
        if key:
            row, created = await tables.upsert_by_key(services, workspace_id, arguments["table"], arguments["data"], key)
            return ToolOutcome(value={"row": tables.row_json(row), "created": created})
        row = await tables.add_row(services, workspace_id, arguments["table"], arguments["data"], None)
        return ToolOutcome(value={"row": tables.row_json(row), "created": True})
    raise NotFound(f"Unknown tool: {tool.name}")


async def _proxy(services: Services, access: McpAccess, tool: AgentTool, arguments: dict[str, Any]) -> ToolOutcome:
    arguments = check_inputs(tool.input_schema, arguments, "arguments")
    state = await load_state(services, tool.connection_id, workspace_id=access.grant.workspace_id)
    headers = CIMultiDict()
    body = None
    if arguments.get("body") is not None:
        body = json.dumps(arguments["body"], separators=(",", ":")).encode()
        headers["Content-Type"] = "application/json"
    query = [(str(k), str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (arguments.get("query") or {}).items()]
    _, response = await send(
        services, state, method=arguments["method"], path=arguments["path"], query=query or None, headers=headers, body=body, source=AUDIT_SOURCE
    )
    try:
        raw = await response.content.read(MAX_PROXY_BODY + 1)
        status, content_type = response.status, response.headers.get("Content-Type", "")
    finally:
        response.release()
    truncated = len(raw) > MAX_PROXY_BODY
    text = raw[:MAX_PROXY_BODY].decode("utf-8", "replace")
    parsed: Any = text
    if "json" in content_type and not truncated:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = text
    value = {"status": status, "contentType": content_type or None, "body": parsed, "truncated": truncated}
    if status >= 400:
        return ToolOutcome(value=value, error=f"{tool.provider} answered {status}: {text[:2000]}", status=status)
    return ToolOutcome(value=value, status=status)


async def _flow(services: Services, workspace_id: str, tool: AgentTool, arguments: dict[str, Any]) -> ToolOutcome:
    """Run the flow's published version now, as a live run (``trigger_source`` ``mcp``, alerts
    told), with the arguments as the trigger payload. A step that waits (a long delay) leaves the
    run to the job queue: the answer then says it is ``running``."""
    if not isinstance(arguments, dict):
        raise Invalid("arguments must be an object")
    if tool.input_schema.get("properties") or tool.input_schema.get("required"):
        arguments = check_inputs(tool.input_schema, arguments, "arguments")
    runner = services.flow_runner
    now = utcnow()
    execution_id = new_id()
    async with services.db.transaction(tenant=workspace_id) as session:
        flow = await session.get(Flow, tool.target)
        if flow is None or flow.published_version is None:
            raise NotFound(f"Flow not found: {tool.target}")
        version = flow.published_version
        session.add(
            FlowExecution(
                id=execution_id,
                flow_id=flow.id,
                status="running",
                trigger_source="mcp",
                trigger_payload=arguments,
                version=version,
                attempts=1,
                started_at=now,
            )
        )
    execution = {"id": execution_id, "workspace_id": workspace_id, "flow_id": tool.target, "started_at": now}
    context = RunContext(services, workspace_id, tool.target, execution_id, arguments)

    async def checkpoint(records) -> None:
        await runner.checkpoint(step_rows(records, workspace_id, execution_id))
        for record in records:
            record.written = True

    try:
        outcome = await run_steps(services, context, await runner.plan(tool.target, version), {}, checkpoint)
    except Deferred as wait:
        async with services.db.transaction() as session:
            services.jobs.enqueue(session, JOB_KIND, {"executionIds": [execution_id]}, delay=wait.seconds, workspace_id=workspace_id)
        return ToolOutcome(value={"executionId": execution_id, "status": "running"})
    await runner.finish(execution, outcome, alerts=True)
    steps = {record.step_id: record.output for record in outcome.records if record.status == "completed"}
    last = next((record.output for record in reversed(outcome.records) if record.status == "completed"), None)
    value = {"executionId": execution_id, "status": outcome.status, "error": outcome.error, "output": last, "steps": steps}
    if outcome.status == "failed":
        return ToolOutcome(value=value, error=f"The flow failed: {outcome.error}", status=422)
    return ToolOutcome(value=value)
