"""The ``approval`` step: the execution waits (``waiting``, in the database) until an approver
answers or the approval expires, then runs the steps of the path that answer names (``approved``,
``denied`` or ``timeout``) and records the others skipped. See ``approvals`` for how it is answered.

Like the other steps holding steps, its record is stored when its path has run: the execution
wakes, runs the step again, finds the approval (not a new one) answered, and takes the path."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from patchbay.core.flows import approvals
from patchbay.core.flows.steps import Deferred, RunContext, StepFailed
from patchbay.core.flows.steps_control import _steps, _take
from patchbay.core.timeutil import utcnow

if TYPE_CHECKING:
    from patchbay.core.flows.engine import Frame, Walk
    from patchbay.core.flows.plan import StepPlan

PATHS = ("approved", "denied", "timeout")


class Approval:
    side_effects = False

    def split(self, config: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, list[dict[str, Any]]]]]:
        own = {key: value for key, value in config.items() if key not in PATHS}
        return own, [(path, _steps(config.get(path))) for path in PATHS]

    async def run_control(self, walk: Walk, context: RunContext, plan: StepPlan, config: dict[str, Any], frame: Frame) -> Any:
        if context.test:  # a test run asks nobody: it takes the approved path
            return {"decision": "approved", "test": True, "output": await _take(walk, context, plan, "approved", frame)}
        if frame.item:
            raise StepFailed("an approval cannot run inside a loop")
        expires_in = config.get("expiresInSeconds") or approvals.DEFAULT_EXPIRES_SECONDS
        if isinstance(expires_in, bool) or not isinstance(expires_in, int | float) or not 0 < expires_in <= approvals.MAX_EXPIRES_SECONDS:
            raise StepFailed(f"'expiresInSeconds' must be a number in (0, {approvals.MAX_EXPIRES_SECONDS:g}]")
        approvers = config.get("approvers") or []
        if not isinstance(approvers, list) or not all(isinstance(email, str) and "@" in email for email in approvers):
            raise StepFailed("'approvers' must be a list of email addresses")
        approval = await approvals.open_approval(
            context.services,
            workspace_id=context.workspace_id,
            flow_id=context.flow_id,
            execution_id=context.execution_id,
            step_id=plan.id,
            message=None if config.get("message") is None else str(config["message"]),
            expires_in=float(expires_in),
            approvers=approvers,
        )
        if approval.status == "pending":
            remaining = (approval.expires_at - utcnow()).total_seconds()
            if remaining > 0:
                raise Deferred(remaining, None)
            approval = await approvals.time_out(context.services, approval)
        return {
            "decision": approval.status,
            "approvalId": approval.id,
            "decidedBy": approval.decided_by,
            "note": approval.note,
            "output": await _take(walk, context, plan, approval.status, frame),
        }
