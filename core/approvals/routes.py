"""Approvals over HTTP (spec 4.17, prefix /connect/v1): the organization's policy and its requests."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.approvals import service
from patchbay.core.approvals.api_models import (
    ApprovalPolicyOut,
    ApprovalRequestOut,
    ApprovalRequestPage,
    DecisionDto,
    UpdatePolicyDto,
    policy_json,
    read_policy_changes,
    request_json,
)
from patchbay.core.http.bodies import page_params, read_body
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


@routes.get("/connect/v1/approvals/policy")
@returns(ApprovalPolicyOut)
@requires("approvals.view")
async def get_policy(request: web.Request) -> web.Response:
    """The approval policy of the current organization."""
    policy = await service.policy_of(request.app[SERVICES], principal_of(request).workspace_id)
    return reply(request, policy_json(policy))


@routes.patch("/connect/v1/approvals/policy")
@accepts(UpdatePolicyDto)
@returns(ApprovalPolicyOut)
@requires("approvals.write")
async def update_policy(request: web.Request) -> web.Response:
    """Update the approval policy: enabled, providers, categories, approverRoles, approverUserIds.

    Only an approver under the current policy may (403 otherwise)."""
    principal = principal_of(request)
    changes = await read_policy_changes(request)
    policy = await service.change_policy(request.app[SERVICES], principal.workspace_id, changes, principal=principal)
    return reply(request, policy_json(policy))


async def _list(request: web.Request, status: str | None) -> web.Response:
    page, limit = page_params(request)
    rows, total = await service.request_page(request.app[SERVICES], workspace_id=principal_of(request).workspace_id, status=status, page=page, limit=limit)
    return reply(request, {"data": [request_json(row) for row in rows], "page": page, "limit": limit, "total": total})


@routes.get("/connect/v1/approvals")
@query(**PAGE_QUERY, status={"type": "string"})
@returns(ApprovalRequestPage)
@requires("approvals.view")
async def list_requests(request: web.Request) -> web.Response:
    """All approval requests of the organization, newest first (``?status=`` filters)."""
    return await _list(request, request.query.get("status") or None)


@routes.get("/connect/v1/approvals/pending")
@query(**PAGE_QUERY)
@returns(ApprovalRequestPage)
@requires("approvals.view")
async def list_pending(request: web.Request) -> web.Response:
    """Pending approval requests, newest first."""
    return await _list(request, "pending")


@routes.get("/connect/v1/approvals/{id}")
@returns(ApprovalRequestOut)
@requires("approvals.view")
async def get_request(request: web.Request) -> web.Response:
    """One approval request."""
    row = await service.load_request(request.app[SERVICES], workspace_id=principal_of(request).workspace_id, request_id=request.match_info["id"])
    return reply(request, request_json(row))


async def _note(request: web.Request) -> str | None:
    """The optional body's ``note``."""
    if not (await request.read()).strip():
        return None
    return (await read_body(request, DecisionDto)).note


@routes.post("/connect/v1/approvals/{id}/approve")
@accepts(DecisionDto, required=False)
@returns(ApprovalRequestOut, status=201, description="Approved")
@requires("approvals.write")
async def approve(request: web.Request) -> web.Response:
    """Approve an integration request; an API-key request is connected now. Body ``{note?}``."""
    principal = principal_of(request)
    row = await service.approve(
        request.app[SERVICES], workspace_id=principal.workspace_id, request_id=request.match_info["id"], principal=principal, note=await _note(request)
    )
    return reply(request, request_json(row), status=201)


@routes.post("/connect/v1/approvals/{id}/deny")
@accepts(DecisionDto, required=False)
@returns(ApprovalRequestOut, status=201, description="Denied")
@requires("approvals.write")
async def deny(request: web.Request) -> web.Response:
    """Deny an integration request. Body ``{note?}``."""
    principal = principal_of(request)
    row = await service.deny(
        request.app[SERVICES], workspace_id=principal.workspace_id, request_id=request.match_info["id"], principal=principal, note=await _note(request)
    )
    return reply(request, request_json(row), status=201)


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
