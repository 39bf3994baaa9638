"""Approvals over HTTP (spec 4.17, prefix /connect/v1): the organization's policy and its requests."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from sqlalchemy import func, select

from patchbay.core.appkeys import DB
from patchbay.core.approvals import service
from patchbay.core.approvals.models import ApprovalPolicy, ApprovalRequest
from patchbay.core.billing.limits import attach_app
from patchbay.core.http.bodies import page_envelope, page_params, read_json
from patchbay.core.http.errors import bad_request
from patchbay.core.http.lookups import get_or_404
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso

routes = web.RouteTableDef()

POLICY_FIELDS = {"enabled": "enabled", "providers": "providers", "categories": "categories", "approverRoles": "approver_roles", "approverUserIds": "approver_user_ids"}


def policy_json(policy: ApprovalPolicy | None) -> dict[str, Any]:
    if policy is None:
        return {"enabled": False, "providers": [], "categories": [], "approverRoles": ["admin"], "approverUserIds": [], "updatedAt": None, "updatedBy": None}
    return {
        "enabled": policy.enabled,
        "providers": list(policy.providers or []),
        "categories": list(policy.categories or []),
        "approverRoles": list(policy.approver_roles or []),
        "approverUserIds": list(policy.approver_user_ids or []),
        "updatedAt": iso(policy.updated_at),
        "updatedBy": policy.updated_by,
    }


def request_json(request: ApprovalRequest) -> dict[str, Any]:
    return {
        "id": request.id,
        "provider": request.provider,
        "kind": request.kind,
        "status": request.status,
        "requestedBy": request.requested_by,
        "requestedByKind": request.requested_by_kind,
        "metadata": dict(request.meta or {}),
        "reason": request.reason,
        "decidedBy": request.decided_by,
        "decidedByKind": request.decided_by_kind,
        "decidedAt": iso(request.decided_at),
        "decisionNote": request.decision_note,
        "connectionId": request.connection_id,
        "createdAt": iso(request.created_at),
        "updatedAt": iso(request.updated_at),
    }


def _policy_changes(body: dict[str, Any]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for name, attribute in POLICY_FIELDS.items():
        if name not in body:
            continue
        value = body[name]
        if name == "enabled":
            if not isinstance(value, bool):
                raise bad_request("Validation failed: enabled must be a boolean")
        elif not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise bad_request(f"Validation failed: {name} must be a list of strings")
        changes[attribute] = value
    unknown = set(body) - set(POLICY_FIELDS)
    if unknown:
        raise bad_request(f"Validation failed: unknown field(s) {', '.join(sorted(unknown))}")
    return changes


@routes.get("/connect/v1/approvals/policy")
@requires("approvals.view")
async def get_policy(request: web.Request) -> web.Response:
    """The approval policy of the current organization."""
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].session(tenant=workspace_id) as session:
        return web.json_response(policy_json(await service.get_policy(session, workspace_id)))


@routes.patch("/connect/v1/approvals/policy")
@requires("approvals.write")
async def update_policy(request: web.Request) -> web.Response:
    """Update the approval policy: enabled, providers, categories, approverRoles, approverUserIds.

    Only an approver under the current policy may (403 otherwise)."""
    principal = principal_of(request)
    body = await read_json(request)
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    changes = _policy_changes(body)
    async with request.app[DB].transaction(tenant=principal.workspace_id) as session:
        try:
            policy = await service.update_policy(session, principal.workspace_id, changes, principal=principal)
        except service.ApprovalError as error:
            raise bad_request(f"Validation failed: {error}") from None
        return web.json_response(policy_json(policy))


async def _list(request: web.Request, status: str | None) -> web.Response:
    page, limit = page_params(request)
    status = status or request.query.get("status") or None
    async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
        query = select(ApprovalRequest)
        if status:
            query = query.where(ApprovalRequest.status == status)
        total = await session.scalar(select(func.count()).select_from(query.subquery()))
        rows = await session.scalars(query.order_by(ApprovalRequest.created_at.desc(), ApprovalRequest.id).offset((page - 1) * limit).limit(limit))
        return web.json_response(page_envelope([request_json(row) for row in rows], page, limit, total or 0))


@routes.get("/connect/v1/approvals")
@requires("approvals.view")
async def list_requests(request: web.Request) -> web.Response:
    """All approval requests of the organization, newest first (``?status=`` filters)."""
    return await _list(request, None)


@routes.get("/connect/v1/approvals/pending")
@requires("approvals.view")
async def list_pending(request: web.Request) -> web.Response:
    """Pending approval requests, newest first."""
    return await _list(request, "pending")


@routes.get("/connect/v1/approvals/{id}")
@requires("approvals.view")
async def get_request(request: web.Request) -> web.Response:
    """One approval request."""
    async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
        row = await get_or_404(session, ApprovalRequest, request.match_info["id"], "Approval request not found")
        return web.json_response(request_json(row))


async def _note(request: web.Request) -> str | None:
    if not (await request.read()).strip():
        return None
    body = await read_json(request)
    note = body.get("note") if isinstance(body, dict) else None
    if note is not None and not isinstance(note, str):
        raise bad_request("Validation failed: note must be a string")
    return note


@routes.post("/connect/v1/approvals/{id}/approve")
@requires("approvals.write")
async def approve(request: web.Request) -> web.Response:
    """Approve an integration request; an API-key request is connected now. Body ``{note?}``."""
    principal = principal_of(request)
    row = await service.approve(request.app, workspace_id=principal.workspace_id, request_id=request.match_info["id"], principal=principal, note=await _note(request))
    return web.json_response(request_json(row), status=201)


@routes.post("/connect/v1/approvals/{id}/deny")
@requires("approvals.write")
async def deny(request: web.Request) -> web.Response:
    """Deny an integration request. Body ``{note?}``."""
    principal = principal_of(request)
    row = await service.deny(request.app, workspace_id=principal.workspace_id, request_id=request.match_info["id"], principal=principal, note=await _note(request))
    return web.json_response(request_json(row), status=201)


def setup(app: web.Application) -> None:
    attach_app(app)
    app.router.add_routes(routes)
