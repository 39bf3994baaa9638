"""Approvals that ``approval`` steps wait for (``steps_approval``): opened when the step first
runs (with an email to each of its ``approvers`` carrying signed approve and deny links), answered
by an approver of the workspace through the API or by a signed link, or timed out by the step when
its execution wakes at ``expires_at``. An answer wakes the execution at once.

A signed link carries ``<approval id>.<decision>.<expiry>.<HMAC>`` under the installation's
signing keys (``SecretBox.sign``): changing any part of it, or using it after its expiry, is refused.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import attrs
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.errors import Conflict, Forbidden, Invalid, NotFound
from patchbay.core.flows.models import Flow, FlowApproval, FlowExecution, FlowVersion
from patchbay.core.jobs.queue import JobContext, PermanentFailure
from patchbay.core.timeutil import utcnow

if TYPE_CHECKING:
    from patchbay.core.security.service import Principal
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

EMAIL_JOB = "flows.approval_email"
DECISIONS = ("approved", "denied")
#: how long an approval waits when its step does not say
DEFAULT_EXPIRES_SECONDS = 86400.0
MAX_EXPIRES_SECONDS = 30 * 86400.0
DECIDE_PATH = "/connect/v1/flows/approvals/decide"


def install(services: Services) -> None:
    services.jobs.register(EMAIL_JOB, send_approval_email, max_attempts=5)


# -- signed links --------------------------------------------------------------------------------


def _message(approval_id: str, decision: str, expires: int) -> bytes:
    return f"flow-approval:{approval_id}:{decision}:{expires}".encode()


def signed_token(services: Services, approval_id: str, decision: str, expires: int) -> str:
    return f"{approval_id}.{decision}.{expires}.{services.secrets.sign(_message(approval_id, decision, expires))}"


def decide_url(services: Services, approval_id: str, decision: str, expires: int) -> str:
    return f"{services.settings.public_base_url.rstrip('/')}{DECIDE_PATH}?token={quote(signed_token(services, approval_id, decision, expires))}"


def read_token(services: Services, token: str) -> tuple[str, str]:
    """The approval id and decision a signed link carries; ``Forbidden`` when it was changed or
    has expired."""
    parts = token.split(".")
    if len(parts) != 4 or parts[1] not in DECISIONS or not parts[2].isdigit():
        raise Forbidden("this approval link is not valid")
    approval_id, decision, expires, signature = parts
    if not services.secrets.verify_signature(_message(approval_id, decision, int(expires)), signature):
        raise Forbidden("this approval link is not valid")
    if int(expires) < utcnow().timestamp():
        raise Forbidden("this approval link has expired")
    return approval_id, decision


# -- opening and answering -----------------------------------------------------------------------


async def open_approval(
    services: Services, *, workspace_id: str, flow_id: str, execution_id: str, step_id: str, message: str | None, expires_in: float, approvers: list[str]
) -> FlowApproval:
    """The approval of the execution's step: opened on the step's first run (with an email job per
    approver), the same row on every later run."""
    async with services.db.transaction(tenant=workspace_id) as session:
        found = await session.scalar(select(FlowApproval).where(FlowApproval.execution_id == execution_id, FlowApproval.step_id == step_id))
        if found is not None:
            return found
        approval = FlowApproval(
            flow_id=flow_id, execution_id=execution_id, step_id=step_id, message=message, expires_at=utcnow() + timedelta(seconds=expires_in)
        )
        session.add(approval)
        await session.flush()
        for email in approvers:
            services.jobs.enqueue(session, EMAIL_JOB, {"approvalId": approval.id, "to": email}, workspace_id=workspace_id)
        return approval


async def time_out(services: Services, approval: FlowApproval) -> FlowApproval:
    """Mark a pending approval ``timeout`` (unless an answer came first); answers it as it is now."""
    async with services.db.transaction(tenant=approval.workspace_id) as session:
        await session.execute(
            update(FlowApproval)
            .where(FlowApproval.id == approval.id, FlowApproval.status == "pending")
            .values(status="timeout", decided_at=utcnow(), updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        return await session.get(FlowApproval, approval.id, populate_existing=True)


async def _decide(services: Services, session: AsyncSession, approval: FlowApproval, decision: str, by: str, note: str | None) -> FlowApproval:
    if decision not in DECISIONS:
        raise Invalid(f"decision must be one of {', '.join(DECISIONS)}")
    if approval.status != "pending":
        raise Conflict(f"this approval is already {approval.status}")
    now = utcnow()
    if approval.expires_at <= now:
        raise Conflict("this approval has timed out")
    changed = await session.execute(
        update(FlowApproval)
        .where(FlowApproval.id == approval.id, FlowApproval.status == "pending")
        .values(status=decision, decided_by=by, decided_at=now, note=note, updated_at=now)
        .execution_options(synchronize_session=False)
    )
    if changed.rowcount != 1:
        raise Conflict("this approval was answered meanwhile")
    # wake the execution now: its job due at the expiry then finds nothing to do
    woken = await session.execute(
        update(FlowExecution)
        .where(FlowExecution.id == approval.execution_id, FlowExecution.status == "waiting")
        .values(resume_at=now, updated_at=now)
        .execution_options(synchronize_session=False)
    )
    if woken.rowcount:
        from patchbay.core.flows.engine import enqueue_runs

        await enqueue_runs(services, session, [(approval.execution_id, approval.workspace_id)])
    return await session.get(FlowApproval, approval.id, populate_existing=True)


async def decide(services: Services, *, workspace_id: str, approval_id: str, decision: str, principal: Principal, note: str | None = None) -> FlowApproval:
    """An approver's answer through the API: an approver of the workspace (its approval policy's
    roles and users, ``core.approvals``), else ``Forbidden``."""
    from patchbay.core.approvals.service import get_policy, is_approver

    async with services.db.transaction(tenant=workspace_id) as session:
        approval = await session.scalar(select(FlowApproval).where(FlowApproval.id == approval_id))
        if approval is None:
            raise NotFound("Approval not found")
        if not await is_approver(session, await get_policy(session, workspace_id), workspace_id, principal):
            raise Forbidden("only an approver of the workspace answers an approval")
        return await _decide(services, session, approval, decision, principal.subject or principal.kind, note)


async def decide_by_token(services: Services, token: str) -> FlowApproval:
    """The answer a signed link carries (``Forbidden`` for a changed or expired link)."""
    approval_id, decision = read_token(services, token)
    async with services.db.transaction() as session:
        approval = await session.scalar(select(FlowApproval).where(FlowApproval.id == approval_id))
        if approval is None:
            raise NotFound("Approval not found")
        return await _decide(services, session, approval, decision, "signed link", None)


async def approval_page(services: Services, *, workspace_id: str, status: str | None, page: int, limit: int) -> tuple[list[FlowApproval], int]:
    """The workspace's approvals, newest first; ``status`` filters."""
    statement = select(FlowApproval)
    if status:
        statement = statement.where(FlowApproval.status == status)
    async with services.db.session(tenant=workspace_id) as session:
        total = await session.scalar(select(func.count()).select_from(statement.subquery()))
        rows = (await session.scalars(statement.order_by(FlowApproval.created_at.desc(), FlowApproval.id).offset((page - 1) * limit).limit(limit))).all()
    return list(rows), int(total or 0)


@attrs.frozen
class ApprovalView:
    """An approval as people read it: its flow's name, and its step's ``name`` and ``approvers``
    (the emails sent the signed links) from the steps the execution runs."""

    approval: FlowApproval
    flow_name: str
    step_name: str | None
    emailed: list[str]
    #: pending past its expiry: no answer is taken, the step times out when its execution wakes
    expired: bool


@attrs.frozen
class Answerers:
    """Who answers the workspace's approvals (its approval policy, ``core.approvals``): members of
    ``roles``, and the people of ``emails``, with the ``approvals.write`` permission."""

    roles: list[str]
    emails: list[str]


def _find_step(steps: Any, step_id: str) -> dict[str, Any] | None:
    """The approval step ``step_id`` wherever it sits in ``steps`` (inside a branch, a path...)."""
    if isinstance(steps, dict):
        if steps.get("id") == step_id and steps.get("type") == "approval":
            return steps
        steps = list(steps.values())
    if isinstance(steps, list):
        for item in steps:
            found = _find_step(item, step_id)
            if found is not None:
                return found
    return None


async def approval_views(
    services: Services, *, workspace_id: str, status: str | None = None, decided: bool = False, execution_id: str | None = None, limit: int = 100
) -> list[ApprovalView]:
    """The workspace's approvals, newest first: of ``status``, or answered or timed out when
    ``decided`` (the latest answer first); of one execution when ``execution_id`` is given."""
    statement = select(FlowApproval, Flow.name, FlowExecution.steps, FlowVersion.steps).join(Flow, Flow.id == FlowApproval.flow_id)
    statement = statement.join(FlowExecution, FlowExecution.id == FlowApproval.execution_id).outerjoin(
        FlowVersion, (FlowVersion.flow_id == FlowExecution.flow_id) & (FlowVersion.version == FlowExecution.version)
    )
    if status:
        statement = statement.where(FlowApproval.status == status)
    if decided:
        statement = statement.where(FlowApproval.status != "pending")
    if execution_id:
        statement = statement.where(FlowApproval.execution_id == execution_id)
    newest = FlowApproval.decided_at.desc() if decided else FlowApproval.created_at.desc()
    statement = statement.order_by(newest, FlowApproval.id).limit(limit)
    async with services.db.session(tenant=workspace_id) as session:
        rows = (await session.execute(statement)).all()
    now = utcnow()
    views = []
    for approval, flow_name, own_steps, version_steps in rows:
        step = _find_step(own_steps if own_steps is not None else version_steps, approval.step_id) or {}
        emailed = [email for email in step.get("approvers") or [] if isinstance(email, str)]
        name = step.get("name") if isinstance(step.get("name"), str) else None
        views.append(ApprovalView(approval, flow_name, name, emailed, approval.status == "pending" and approval.expires_at <= now))
    return views


async def pending_count(services: Services, *, workspace_id: str) -> int:
    """How many of the workspace's approvals wait for an answer."""
    async with services.db.session(tenant=workspace_id) as session:
        return int(await session.scalar(select(func.count()).select_from(FlowApproval).where(FlowApproval.status == "pending")) or 0)


async def answerers(services: Services, *, workspace_id: str, principal: Principal) -> tuple[Answerers, bool]:
    """Who answers the workspace's approvals, and whether ``principal`` is one of them (the rule
    :func:`decide` applies)."""
    from patchbay.core.approvals.service import get_policy, is_approver
    from patchbay.core.users.models import User

    async with services.db.session(tenant=workspace_id) as session:
        policy = await get_policy(session, workspace_id)
        user_ids = list(policy.approver_user_ids or []) if policy is not None else []
        emails = list(await session.scalars(select(User.email).where(User.id.in_(user_ids)).order_by(User.email))) if user_ids else []
        roles = list(policy.approver_roles or []) if policy is not None else ["admin"]
        return Answerers(roles, emails), await is_approver(session, policy, workspace_id, principal)


def approval_json(approval: FlowApproval) -> dict[str, Any]:
    from patchbay.core.timeutil import iso

    return {
        "id": approval.id,
        "flowId": approval.flow_id,
        "executionId": approval.execution_id,
        "stepId": approval.step_id,
        "status": approval.status,
        "message": approval.message,
        "expiresAt": iso(approval.expires_at),
        "decidedBy": approval.decided_by,
        "decidedAt": iso(approval.decided_at),
        "note": approval.note,
        "createdAt": iso(approval.created_at),
    }


# -- email -----------------------------------------------------------------------------------------


async def send_approval_email(context: JobContext) -> None:
    """Email one approver the approval's message and its signed approve and deny links (valid
    until the approval expires)."""
    from patchbay.core.workspaces.mail import MailNotConfigured, send_mail

    services = context.services
    async with services.db.session() as session:
        approval = await session.get(FlowApproval, context.payload["approvalId"])
    if approval is None or approval.status != "pending":
        return
    expires = int(approval.expires_at.timestamp())
    text = "\n".join(
        [
            approval.message or f"A flow waits for your approval (step {approval.step_id}).",
            "",
            f"Approve: {decide_url(services, approval.id, 'approved', expires)}",
            f"Deny: {decide_url(services, approval.id, 'denied', expires)}",
            "",
            f"Unanswered by {approval.expires_at.isoformat()}, the flow goes on without an approval.",
        ]
    )
    try:
        await send_mail(services.settings.smtp, to=context.payload["to"], subject="Approval requested", text=text)
    except MailNotConfigured as error:
        raise PermanentFailure(str(error)) from None
