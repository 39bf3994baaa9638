"""Providers and connections of the connect API (spec 4.3): connect with API-key credentials,
status, disconnect, the connection list, delete, health, check-health and the audit log of calls.
The bodies read and answered are the models of ``core.connections.api_models``."""

from __future__ import annotations

import base64
import binascii
from dataclasses import asdict
from datetime import datetime
from typing import Any

from aiohttp import web

from patchbay.core.appkeys import DB, SERVICES
from patchbay.core.approvals.service import gate_connect
from patchbay.core.connections import service, store
from patchbay.core.connections.models import CONNECTION_STATUSES, Connection
from patchbay.core.connections.runtime import runtime
from patchbay.core.connections.api_models import (
    ApiKeyCredentials, AuditPage, Connected, ConnectDto, ConnectionDeleted, ConnectionOut, ConnectionPage, Disconnected,
    HealthCheck, HealthReport, PendingApproval, ProviderStatus, UpdateConnectionDto, refuse_control_characters,
)  # fmt: skip
from patchbay.core.http.bodies import page_params, query_int, read_object, structure
from patchbay.core.http.errors import bad_request
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso

routes = web.RouteTableDef()


def connection_json(row: Connection) -> dict[str, Any]:
    """A connection as the API shows it (``ConnectionOut``): never its credentials."""
    return {
        "id": row.id,
        "connectionId": row.id,
        "provider": row.provider,
        "status": row.status,
        "health": row.health,
        "connectedAt": iso(row.connected_at),
        "expiresAt": iso(row.expires_at),
        "lastRefreshedAt": iso(row.last_refreshed_at),
        "lastHealthCheckAt": iso(row.last_health_check_at),
        "refreshError": row.refresh_error,
        "metadata": row.meta or {},
        "params": row.params or {},
        "scopes": row.scopes or [],
        "endUserId": row.end_user_id,
        "createdAt": iso(row.created_at),
        "updatedAt": iso(row.updated_at),
    }


# ---------------------------------------------------------------------------------------------
# /providers/{providerType}/...
# ---------------------------------------------------------------------------------------------


@routes.post("/connect/v1/providers/{providerType}/connect")
@accepts(ConnectDto)
@returns(Connected, status=201, description="Connected")
@returns(PendingApproval, status=202, description="Held for approval")
@requires("connections.write")
async def connect(request: web.Request) -> web.Response:
    """Connect an API-key provider with ``{credentials: {apiKey, apiSecret?}, metadata?, params?}``.

    Answers 201 ``{success, connectionId}``, or 202 ``{status: pending_approval, approvalId}`` when
    the workspace's approval policy holds the request. OAuth providers use ``/auth/{type}/login``.
    """
    principal = principal_of(request)
    app = request.app
    provider = service.provider_or_404(app, request.match_info["providerType"])
    body = await read_object(request)
    dto = structure(body, ConnectDto)
    if dto.credentials is None and provider.auth_mode != "none":
        raise bad_request("Validation failed: credentials is required (an object with apiKey)")
    if dto.credentials is not None:
        refuse_control_characters(apiKey=dto.credentials.apiKey, apiSecret=dto.credentials.apiSecret)
    credentials = {key: value for key, value in asdict(dto.credentials or ApiKeyCredentials()).items() if value is not None}
    metadata, params = dto.metadata or {}, dto.params or {}
    if provider.auth_mode == "oauth2":
        raise bad_request(f"{provider.display_name} connects with OAuth: use GET /auth/{provider.name}/login")
    async with app[DB].transaction(tenant=principal.workspace_id) as session:
        approval_id = await gate_connect(app[SERVICES], session, workspace_id=principal.workspace_id, provider=provider.name, principal=principal, payload=body)
    if approval_id is not None:
        return reply(request, {"status": "pending_approval", "approvalId": approval_id}, status=202)
    row = await service.connect_with_api_key(
        app, workspace_id=principal.workspace_id, provider_name=provider.name, credentials=credentials, metadata=metadata, params=params
    )
    return reply(request, {"success": True, "connectionId": row.id}, status=201)


@routes.get("/connect/v1/providers/{providerType}/status")
@returns(ProviderStatus)
@requires("connections.view")
async def provider_status(request: web.Request) -> web.Response:
    """The caller's connection state for a provider: ``{status, connectedAt, metadata}``."""
    principal = principal_of(request)
    provider = service.provider_or_404(request.app, request.match_info["providerType"])
    async with request.app[DB].session(tenant=principal.workspace_id) as session:
        row = await store.latest_connection(session, provider.name)
    if row is None:
        return reply(request, {"status": "not_connected", "connectedAt": None, "metadata": {}, "connectionId": None})
    return reply(request, {"status": row.status, "connectedAt": iso(row.connected_at), "metadata": row.meta or {}, "connectionId": row.id,
                           "health": row.health, "expiresAt": iso(row.expires_at)})  # fmt: skip


@routes.delete("/connect/v1/providers/{providerType}/disconnect")
@returns(Disconnected)
@requires("connections.write")
async def provider_disconnect(request: web.Request) -> web.Response:
    """Disconnect every active connection of the provider, revoking the credentials at the
    provider where it allows: ``{success, disconnected, revoked}``."""
    principal = principal_of(request)
    provider = service.provider_or_404(request.app, request.match_info["providerType"])
    ids = await service.active_connection_ids(request.app, workspace_id=principal.workspace_id, provider=provider.name)
    revoked = 0
    for connection_id in ids:
        revoked += await service.disconnect(request.app, workspace_id=principal.workspace_id, connection_id=connection_id)
    return reply(request, {"success": True, "disconnected": len(ids), "revoked": revoked})


# ---------------------------------------------------------------------------------------------
# /connections
# ---------------------------------------------------------------------------------------------


@routes.get("/connect/v1/connections/health")
@returns(HealthReport)
@requires("connections.view")
async def connections_health(request: web.Request) -> web.Response:
    """The health of every connection of the workspace (disconnected ones left out), with counts."""
    principal = principal_of(request)
    async with request.app[DB].session(tenant=principal.workspace_id) as session:
        rows = await store.live_connections(session)
    data = [
        {"connectionId": r.id, "provider": r.provider, "status": r.status, "health": r.health or ("invalid" if r.status == "invalid" else "unknown"),
         "lastHealthCheckAt": iso(r.last_health_check_at), "expiresAt": iso(r.expires_at), "refreshError": r.refresh_error}
        for r in rows
    ]  # fmt: skip
    summary: dict[str, int] = {}
    for item in data:
        summary[item["health"]] = summary.get(item["health"], 0) + 1
    return reply(request, {"data": data, "summary": summary, "total": len(data)})


@routes.get("/connect/v1/connections")
@query(**PAGE_QUERY, provider={"type": "string"}, status={"type": "string", "enum": list(CONNECTION_STATUSES)}, endUserId={"type": "string"})
@returns(ConnectionPage)
@requires("connections.view")
async def list_connections(request: web.Request) -> web.Response:
    """The workspace's connections, newest first; ``?provider=``, ``?status=`` and ``?endUserId=``
    (the end user who connected on the hosted connect page) filter."""
    principal = principal_of(request)
    page, limit = page_params(request)
    status = request.query.get("status")
    if status and status not in CONNECTION_STATUSES:
        raise bad_request(f"Query parameter 'status' must be one of {', '.join(CONNECTION_STATUSES)}")
    async with request.app[DB].session(tenant=principal.workspace_id) as session:
        rows, total = await store.connection_page(
            session, provider=request.query.get("provider"), status=status, end_user_id=request.query.get("endUserId"), page=page, limit=limit
        )
        data = [connection_json(row) for row in rows]
    return reply(request, {"data": data, "page": page, "limit": limit, "total": total})


@routes.get("/connect/v1/connections/{id}")
@returns(ConnectionOut)
@requires("connections.view")
async def get_connection(request: web.Request) -> web.Response:
    """One connection (never its credentials)."""
    principal = principal_of(request)
    async with request.app[DB].session(tenant=principal.workspace_id) as session:
        row = await store.get_row(session, request.match_info["id"])
    return reply(request, connection_json(row))


@routes.patch("/connect/v1/connections/{id}")
@accepts(UpdateConnectionDto)
@returns(ConnectionOut)
@requires("connections.write")
async def update_connection(request: web.Request) -> web.Response:
    """Change a connection's metadata: ``{metadata: {...}}`` is merged into it (a key set to null
    is removed); e.g. the Facebook page whose lead webhooks belong to this connection."""
    principal = principal_of(request)
    dto = structure(await read_object(request), UpdateConnectionDto)
    async with request.app[DB].transaction(tenant=principal.workspace_id) as session:
        row = await store.merge_metadata(
            request.app, session, workspace_id=principal.workspace_id, connection_id=request.match_info["id"], metadata=dto.metadata
        )
        answer = connection_json(row)
    runtime(request.app).forget(row.id)
    return reply(request, answer)


@routes.delete("/connect/v1/connections/{id}")
@returns(ConnectionDeleted)
@requires("connections.write")
async def delete_connection(request: web.Request) -> web.Response:
    """Revoke the credential at the provider where possible and delete the connection."""
    principal = principal_of(request)
    revoked = await service.disconnect(request.app, workspace_id=principal.workspace_id, connection_id=request.match_info["id"], delete=True)
    return reply(request, {"success": True, "revoked": revoked})


@routes.post("/connect/v1/connections/{id}/check-health")
@returns(HealthCheck, status=201, description="Checked")
@requires("connections.write")
async def check_health(request: web.Request) -> web.Response:
    """Check the connection now (refreshing an expiring token, then the provider's cheap check)."""
    principal = principal_of(request)
    result = await service.check_health(request.app, workspace_id=principal.workspace_id, connection_id=request.match_info["id"])
    result["checkedAt"] = iso(result["checkedAt"])
    return reply(request, result, status=201)


def _encode_cursor(moment: datetime, row_id: str) -> str:
    return base64.urlsafe_b64encode(f"{moment.isoformat()}|{row_id}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        moment, row_id = raw.split("|", 1)
        return datetime.fromisoformat(moment), row_id
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise bad_request("Query parameter 'cursor' is not valid") from None


@routes.get("/connect/v1/connections/{id}/audit")
@query(limit={"type": "integer", "minimum": 1, "maximum": 200, "default": 50}, cursor={"type": "string"})
@returns(AuditPage)
@requires("connections.view")
async def connection_audit(request: web.Request) -> web.Response:
    """The audit log of calls made with the connection, newest first (cursor list): method, path
    (without query), status, duration, source, time."""
    principal = principal_of(request)
    connection_id = request.match_info["id"]
    limit = query_int(request, "limit", 50, maximum=200)
    after = _decode_cursor(request.query["cursor"]) if request.query.get("cursor") else None
    await runtime(request.app).audit.flush()
    async with request.app[DB].session(tenant=principal.workspace_id) as session:
        await store.get_row(session, connection_id)  # 404 for another workspace's connection
        rows = await store.audit_page(session, connection_id, after=after, limit=limit)
    more = len(rows) > limit
    rows = rows[:limit]
    data = [
        {"id": r.id, "connectionId": r.connection_id, "provider": r.provider, "source": r.source, "method": r.method, "path": r.path,
         "status": r.status, "durationMs": r.duration_ms, "error": r.error, "createdAt": iso(r.created_at)}
        for r in rows
    ]  # fmt: skip
    next_cursor = _encode_cursor(rows[-1].created_at, rows[-1].id) if more and rows else None
    return reply(request, {"data": data, "nextCursor": next_cursor})


__all__ = ["routes", "connection_json"]
