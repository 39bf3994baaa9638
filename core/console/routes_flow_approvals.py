"""Flow approvals in the console: the approvals the workspace's executions wait for (and the ones
recently answered), and an approver's answer. The answer goes through ``flows.approvals.decide``,
the service of ``POST /connect/v1/flows/approvals/{id}/decision``: the same approvers, the same
409 for an approval already answered or timed out, and the execution woken at once.

Listed in ``feature.AREAS`` before ``routes_flows``, whose ``flows/{flow_id}`` would take
``approvals`` for a flow id."""

from __future__ import annotations

from typing import Any, Literal

from aiohttp import web

from patchbay.core.console.pages import View, action, page, render, see_other
from patchbay.core.console.service import PREFIX
from patchbay.core.errors import Conflict, Invalid
from patchbay.core.flows import approvals
from patchbay.core.http.openapi import form_model
from patchbay.core.http.responses import HTML, returns

routes = web.RouteTableDef()
BASE = PREFIX + "/w/{workspace_id}/flows/approvals"
SHOWN = 100  # pending approvals listed
RECENT = 20  # answered or timed-out approvals listed
NOTE_MAX = 2000  # as the API's answer


@form_model
class StepDecisionForm:
    """Approve or deny what an ``approval`` step of a flow asks."""

    csrf: str
    """The session's CSRF token."""
    note: str | None = None
    """Why (kept with the answer, in the step's output)."""
    back: Literal["approvals", "execution"] = "approvals"
    """The page to open once answered: the approvals, or the execution."""


async def _page(request: web.Request, view: View, *, error: str | None = None, status: int = 200) -> web.Response:
    services, workspace_id = view.services, view.workspace_id
    pending = await approvals.approval_views(services, workspace_id=workspace_id, status="pending", limit=SHOWN)
    decided = await approvals.approval_views(services, workspace_id=workspace_id, decided=True, limit=RECENT)
    answerers, may_answer = await approvals.answerers(services, workspace_id=workspace_id, principal=view.principal)
    context = {"note_max": NOTE_MAX, "pending": pending, "decided": decided, "answerers": answerers, "may_answer": may_answer, "error": error}
    return render(request, "console/flow_approvals.html", context, view=view, status=status, current="flows")


async def waiting_on(view: View, execution_id: str) -> dict[str, Any]:
    """What the execution page shows of the approvals the execution waits for (with approve and
    deny for an approver)."""
    pending = await approvals.approval_views(view.services, workspace_id=view.workspace_id, status="pending", execution_id=execution_id)
    if not pending:
        return {"approvals": []}
    answerers, may_answer = await approvals.answerers(view.services, workspace_id=view.workspace_id, principal=view.principal)
    return {"approvals": pending, "answerers": answerers, "may_answer": may_answer, "note_max": NOTE_MAX}


@routes.get(BASE)
@page()
async def flow_approvals_page(request: web.Request, view: View) -> web.Response:
    """The approvals the workspace's executions wait for, newest first, with approve and deny for
    an approver, and the latest answered or timed out."""
    return await _page(request, view)


async def _answer(request: web.Request, view: View, form: StepDecisionForm, decision: str) -> web.StreamResponse:
    if len(form.note or "") > NOTE_MAX:
        raise Invalid(f"The note is at most {NOTE_MAX} characters")
    try:
        approval = await approvals.decide(
            view.services,
            workspace_id=view.workspace_id,
            approval_id=request.match_info["approval_id"],
            decision=decision,
            principal=view.principal,
            note=form.note or None,
        )
    except Conflict as error:
        return await _page(request, view, error=error.message, status=409)
    if form.back == "execution":
        raise see_other(request, view.url(f"flows/{approval.flow_id}/executions/{approval.execution_id}"))
    raise see_other(request, view.url("flows/approvals"))


@routes.post(BASE + "/{approval_id}/approve")
@returns(HTML, status=400, description="A note longer than the API takes")
@returns(HTML, status=409, description="Already answered or timed out: the approvals page says so")
@action(role="manager", form=StepDecisionForm, description="Answered: to the approvals, or to the execution")
async def approve_flow_step(request: web.Request, view: View, form: StepDecisionForm) -> web.StreamResponse:
    """Approve: the execution runs the step's ``approved`` path at once (an approver of the
    workspace only, as for the API)."""
    return await _answer(request, view, form, "approved")


@routes.post(BASE + "/{approval_id}/deny")
@returns(HTML, status=400, description="A note longer than the API takes")
@returns(HTML, status=409, description="Already answered or timed out: the approvals page says so")
@action(role="manager", form=StepDecisionForm, description="Answered: to the approvals, or to the execution")
async def deny_flow_step(request: web.Request, view: View, form: StepDecisionForm) -> web.StreamResponse:
    """Deny: the execution runs the step's ``denied`` path at once (an approver of the workspace
    only, as for the API)."""
    return await _answer(request, view, form, "denied")
