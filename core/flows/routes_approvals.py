"""Flow approvals over HTTP: the approvals executions wait for, an approver's answer, and what a
signed approval link opens and sends (``approvals``). Registered before ``routes_flows``, whose
``/connect/v1/flows/{flowId}`` would take ``approvals`` for a flow id."""

from __future__ import annotations

import html

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows import approvals
from patchbay.core.flows.api_models import ApprovalDecisionDto, FlowApprovalOut, FlowApprovalPage, SignedDecisionDto, read_checked
from patchbay.core.http.bodies import page_envelope, page_params
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import HTML, reply, returns
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


@routes.get("/connect/v1/flows/approvals")
@query(**PAGE_QUERY, status={"type": "string", "enum": ["pending", "approved", "denied", "timeout"]})
@returns(FlowApprovalPage)
@requires("flows.view")
async def list_approvals(request: web.Request) -> web.Response:
    """The approvals the workspace's executions wait for (and answered ones), newest first."""
    page, limit = page_params(request)
    rows, total = await approvals.approval_page(
        request.app[SERVICES], workspace_id=principal_of(request).workspace_id, status=request.query.get("status"), page=page, limit=limit
    )
    return reply(request, page_envelope([approvals.approval_json(a) for a in rows], page, limit, total))


@routes.post("/connect/v1/flows/approvals/{approvalId}/decision")
@accepts(ApprovalDecisionDto)
@returns(FlowApprovalOut, status=201, description="The answer, recorded")
@requires("approvals.write")
async def decide_approval(request: web.Request) -> web.Response:
    """Answer an approval (an approver of the workspace, as its approval policy says): the waiting
    execution runs the ``approved`` or ``denied`` path at once. 409 when already answered or timed out."""
    body = await read_checked(request, ApprovalDecisionDto)
    approval = await approvals.decide(
        request.app[SERVICES],
        workspace_id=principal_of(request).workspace_id,
        approval_id=request.match_info["approvalId"],
        decision=body["decision"],
        principal=principal_of(request),
        note=body.get("note"),
    )
    return reply(request, approvals.approval_json(approval), status=201)


@routes.get("/connect/v1/flows/approvals/decide")
@query(token={"type": "string"})
@returns(HTML)
async def signed_link_page(request: web.Request) -> web.Response:
    """What a signed approval link opens: a page whose button sends the answer (a GET changes
    nothing, so a mail scanner following the link answers nothing). No credential: the signed
    token is the authority."""
    approval_id, decision = approvals.read_token(request.app[SERVICES], request.query.get("token", ""))
    token = html.escape(request.query["token"], quote=True)
    verb = "Approve" if decision == "approved" else "Deny"
    page = (
        f"<!doctype html><title>{verb}</title><form method=post>"
        f'<input type=hidden name=token value="{token}"><p>{verb} request {html.escape(approval_id)}?</p>'
        f"<button>{verb}</button></form>"
    )
    return web.Response(text=page, content_type="text/html")


@routes.post("/connect/v1/flows/approvals/decide")
@accepts(SignedDecisionDto)
@returns(FlowApprovalOut, status=201, description="The answer, recorded")
async def signed_link_decision(request: web.Request) -> web.Response:
    """Answer an approval with a signed link's token (a JSON body, or the link page's form). 403
    for a link that was changed or has expired, 409 when already answered or timed out."""
    if request.content_type == "application/x-www-form-urlencoded":
        token = str((await request.post()).get("token") or "")
    else:
        token = (await read_checked(request, SignedDecisionDto))["token"]
    return reply(request, approvals.approval_json(await approvals.decide_by_token(request.app[SERVICES], token)), status=201)


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
