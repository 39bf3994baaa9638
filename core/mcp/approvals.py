"""Tool calls that wait for a person: the workspace's agent policy names the tools (or actions) whose
calls need approval; such a call becomes an approval request of ``core.approvals`` (kind
``agent_tool``), the alert channels are told (operator event ``agent.approval_requested``), and
the call waits until an approver answers with ``POST /connect/v1/approvals/{id}/approve`` or
``/deny`` (the same routes, the same approvers as connection approvals), or until
``[mcp] approval_timeout_seconds`` pass (the request is then marked ``denied`` with a note saying
it expired). A call abandoned while it waits (the client disconnected, the server stops) marks its
request ``denied`` as cancelled, so that a later approval runs nothing and says so.

The decision may be taken by another process, so the waiting call reads the request's status,
at growing intervals (from 0.1 s to 2 s), rather than waiting on an in-process signal.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import attrs
from sqlalchemy import select, update

from patchbay.core.alerts.operator_events import AGENT_APPROVAL_REQUESTED, record
from patchbay.core.approvals.models import ApprovalRequest
from patchbay.core.errors import Invalid
from patchbay.core.mcp.models import AgentPolicy
from patchbay.core.timeutil import utcnow

if TYPE_CHECKING:
    from patchbay.core.mcp.access import McpAccess
    from patchbay.core.mcp.tools import AgentTool
    from patchbay.core.services import Services

KIND = "agent_tool"
FIRST_POLL = 0.1
LONGEST_POLL = 2.0
MAX_APPROVAL_TOOLS = 500
#: past the deadline, how long a decision an approver has started (``approving``) may still take
DECIDING_GRACE_SECONDS = 60


@attrs.frozen
class Decision:
    approved: bool
    request_id: str
    note: str | None


def policy_json(policy: AgentPolicy | None) -> dict[str, Any]:
    return {"approvalTools": list(policy.approval_tools or []) if policy else []}


async def policy_of(services: Services, workspace_id: str) -> AgentPolicy | None:
    async with services.db.session(tenant=workspace_id) as session:
        return await session.scalar(select(AgentPolicy))


async def set_policy(services: Services, workspace_id: str, *, approval_tools: list[str]) -> AgentPolicy:
    """Replace the list of tool names (``hubspot__create_contact``) or action ids
    (``hubspot.create_contact``) whose calls need approval."""
    names = list(dict.fromkeys(str(name).strip() for name in approval_tools))
    if len(names) > MAX_APPROVAL_TOOLS or any(not name or len(name) > 200 for name in names):
        raise Invalid(f"approvalTools: at most {MAX_APPROVAL_TOOLS} names of 1 to 200 characters")
    async with services.db.transaction(tenant=workspace_id) as session:
        policy = await session.scalar(select(AgentPolicy))
        if policy is None:
            policy = AgentPolicy(workspace_id=workspace_id)
            session.add(policy)
        policy.approval_tools = names
        await session.flush()
        return policy


async def request_approval(services: Services, access: McpAccess, tool: AgentTool, arguments: dict[str, Any]) -> str:
    """Record a pending request for this call and tell the alert channels, in one transaction."""
    grant = access.grant
    requester = grant.user_id or (f"end_user:{grant.end_user_id}" if grant.end_user_id else grant.client_id)
    meta = {
        "tool": tool.name,
        "action": tool.action_id,
        "arguments": arguments,
        "grantId": grant.id,
        "clientId": grant.client_id,
        "userId": grant.user_id,
        "endUserId": grant.end_user_id,
    }
    async with services.db.transaction(tenant=grant.workspace_id) as session:
        request = ApprovalRequest(
            workspace_id=grant.workspace_id,
            provider=tool.provider or tool.kind,
            kind=KIND,
            status="pending",
            requested_by=requester,
            requested_by_kind="agent",
            meta=meta,
            reason=f"Agent {grant.client_id} calls {tool.name}",
            connection_id=tool.connection_id,
        )
        session.add(request)
        await session.flush()
        record(
            session,
            AGENT_APPROVAL_REQUESTED,
            f"Agent {grant.client_id} waits for approval to call {tool.name} (approval request {request.id})",
            workspace_id=grant.workspace_id,
            details={"approvalId": request.id, "tool": tool.name, "connectionId": tool.connection_id, "clientId": grant.client_id, "requestedBy": requester},
        )
        return request.id


CANCELLED_NOTE = "cancelled: the agent's call ended before an approver answered"
#: cancellations under way, held so that they finish after the call's task is gone
_cancelling: set[asyncio.Task[None]] = set()


async def _deny_pending(services: Services, workspace_id: str, request_id: str, note: str) -> bool:
    """Deny the request if it is still pending; True if this did."""
    async with services.db.transaction(tenant=workspace_id) as session:
        denied = await session.execute(
            update(ApprovalRequest)
            .where(ApprovalRequest.id == request_id, ApprovalRequest.status == "pending")
            .values(status="denied", decision_note=note, decided_at=utcnow(), updated_at=utcnow())
        )
    return denied.rowcount == 1


async def wait_for_decision(services: Services, workspace_id: str, request_id: str, *, timeout: float) -> Decision:
    """Read the request until it is decided; past ``timeout`` it is denied as expired (unless an
    approver took it meanwhile). Cancelled (the call was abandoned), it denies a still pending
    request as cancelled, in a task of its own that the caller's cancellation cannot stop."""
    try:
        return await _wait(services, workspace_id, request_id, timeout=timeout)
    except asyncio.CancelledError:
        task = asyncio.get_running_loop().create_task(_deny_pending(services, workspace_id, request_id, CANCELLED_NOTE))
        _cancelling.add(task)
        task.add_done_callback(_cancelling.discard)
        raise


async def _wait(services: Services, workspace_id: str, request_id: str, *, timeout: float) -> Decision:
    deadline = time.monotonic() + timeout
    pause = FIRST_POLL
    while True:
        async with services.db.session(tenant=workspace_id) as session:
            row = (await session.execute(select(ApprovalRequest.status, ApprovalRequest.decision_note).where(ApprovalRequest.id == request_id))).first()
        if row is None:
            return Decision(False, request_id, "the approval request was removed")
        if row.status in ("approved", "completed"):
            return Decision(True, request_id, row.decision_note)
        if row.status == "denied":
            return Decision(False, request_id, row.decision_note)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            if await _deny_pending(services, workspace_id, request_id, "expired: no approver answered in time"):
                return Decision(False, request_id, "expired: no approver answered in time")
            if remaining < -DECIDING_GRACE_SECONDS:  # an approver's decision has been under way too long
                return Decision(False, request_id, "the approver's decision did not finish in time")
        await asyncio.sleep(min(pause, remaining) if remaining > 0 else pause)
        pause = min(pause * 2, LONGEST_POLL)
