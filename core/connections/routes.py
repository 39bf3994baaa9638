"""Providers and connections of the connect API (spec 4.3): connect with API-key credentials,
status, disconnect, the connection list, delete, health, check-health and the audit log of calls."""

from __future__ import annotations

import base64
import binascii
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from aiohttp import web
from sqlalchemy import and_, func, or_, select

from patchbay.core.appkeys import DB
from patchbay.core.approvals.service import gate_connect
from patchbay.core.connections import service
from patchbay.core.connections.models import ACTIVE_STATUSES, Connection, ProxyCallLog
from patchbay.core.connections.runtime import runtime
from patchbay.core.connections.store import active_connection, get_row
from patchbay.core.http.bodies import page_envelope, page_params, query_int, read_object, structure
from patchbay.core.http.errors import bad_request
from patchbay.core.http.openapi import accepts
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso
from patchbay.core.webhooks.routing_keys import ensure_routing_keys_free

routes = web.RouteTableDef()


@dataclass
class ApiKeyCredentials:
    """``apiKey`` (the key, a username or a client id by auth mode) and ``apiSecret``."""

    apiKey: str | None = None
    apiSecret: str | None = None


@dataclass
class ConnectDto:
    """The body of ``POST /connect/v1/providers/{providerType}/connect``."""

    credentials: ApiKeyCredentials | None = None
    metadata: dict[str, Any] | None = None
    params: dict[str, Any] | None = None


def connection_json(row: Connection) -> dict[str, Any]:
    """A connection as the API shows it: never its credentials."""
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
    credentials = {key: value for key, value in asdict(dto.credentials or ApiKeyCredentials()).items() if value is not None}
    metadata, params = dto.metadata or {}, dto.params or {}
    if provider.auth_mode == "oauth2":
        raise bad_request(f"{provider.display_name} connects with OAuth: use GET /auth/{provider.name}/login")
    async with app[DB].transaction(tenant=principal.workspace_id) as session:
        approval_id = await gate_connect(session, workspace_id=principal.workspace_id, provider=provider.name, principal=principal, payload=body)
    if approval_id is not None:
        return web.json_response({"status": "pending_approval", "approvalId": approval_id}, status=202)
    row = await service.connect_with_api_key(
        app, workspace_id=principal.workspace_id, provider_name=provider.name, credentials=credentials, metadata=metadata, params=params
    )
    return web.json_response({"success": True, "connectionId": row.id}, status=201)


@routes.get("/connect/v1/providers/{providerType}/status")
@requires("connections.view")
async def provider_status(request: web.Request) -> web.Response:
    """The caller's connection state for a provider: ``{status, connectedAt, metadata}``."""
    principal = principal_of(request)
    provider = service.provider_or_404(request.app, request.match_info["providerType"])
    async with request.app[DB].session(tenant=principal.workspace_id) as session:
        row = await active_connection(session, provider.name)
        if row is None:
            row = await session.scalar(
                select(Connection).where(Connection.provider == provider.name).order_by(Connection.updated_at.desc()).limit(1)
            )
    if row is None:
        return web.json_response({"status": "not_connected", "connectedAt": None, "metadata": {}, "connectionId": None})
    return web.json_response({"status": row.status, "connectedAt": iso(row.connected_at), "metadata": row.meta or {}, "connectionId": row.id,
                              "health": row.health, "expiresAt": iso(row.expires_at)})  # fmt: skip


@routes.delete("/connect/v1/providers/{providerType}/disconnect")
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
    return web.json_response({"success": True, "disconnected": len(ids), "revoked": revoked})


# ---------------------------------------------------------------------------------------------
# /connections
# ---------------------------------------------------------------------------------------------


@routes.get("/connect/v1/connections/health")
@requires("connections.view")
async def connections_health(request: web.Request) -> web.Response:
    """The health of every connection of the workspace (disconnected ones left out), with counts."""
    principal = principal_of(request)
    async with request.app[DB].session(tenant=principal.workspace_id) as session:
        rows = list(await session.scalars(select(Connection).where(Connection.status != "disconnected").order_by(Connection.created_at)))
    data = [
        {"connectionId": r.id, "provider": r.provider, "status": r.status, "health": r.health or ("invalid" if r.status == "invalid" else "unknown"),
         "lastHealthCheckAt": iso(r.last_health_check_at), "expiresAt": iso(r.expires_at), "refreshError": r.refresh_error}
        for r in rows
    ]  # fmt: skip
    summary: dict[str, int] = {}
    for item in data:
        summary[item["health"]] = summary.get(item["health"], 0) + 1
    return web.json_response({"data": data, "summary": summary, "total": len(data)})


@routes.get("/connect/v1/connections")
@requires("connections.view")
async def list_connections(request: web.Request) -> web.Response:
    """The workspace's connections, newest first; ``?provider=``, ``?status=`` and ``?endUserId=``
    (the end user who connected on the hosted connect page) filter."""
    principal = principal_of(request)
    page, limit = page_params(request)
    conditions = []
    if request.query.get("provider"):
        conditions.append(Connection.provider == request.query["provider"])
    if request.query.get("status"):
        conditions.append(Connection.status == request.query["status"])
    if request.query.get("endUserId"):
        conditions.append(Connection.end_user_id == request.query["endUserId"])
    async with request.app[DB].session(tenant=principal.workspace_id) as session:
        total = await session.scalar(select(func.count()).select_from(Connection).where(*conditions))
        rows = await session.scalars(
            select(Connection).where(*conditions).order_by(Connection.created_at.desc(), Connection.id).offset((page - 1) * limit).limit(limit)
        )
        data = [connection_json(row) for row in rows]
    return web.json_response(page_envelope(data, page, limit, int(total or 0)))


@routes.get("/connect/v1/connections/{id}")
@requires("connections.view")
async def get_connection(request: web.Request) -> web.Response:
    """One connection (never its credentials)."""
    principal = principal_of(request)
    async with request.app[DB].session(tenant=principal.workspace_id) as session:
        row = await get_row(session, request.match_info["id"])
    return web.json_response(connection_json(row))


@routes.patch("/connect/v1/connections/{id}")
@requires("connections.write")
async def update_connection(request: web.Request) -> web.Response:
    """Change a connection's metadata: ``{metadata: {...}}`` is merged into it (a key set to null
    is removed); e.g. the Facebook page whose lead webhooks belong to this connection."""
    principal = principal_of(request)
    body = await read_object(request)
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        raise bad_request("Validation failed: metadata must be an object")
    async with request.app[DB].transaction(tenant=principal.workspace_id) as session:
        row = await get_row(session, request.match_info["id"])
        merged = {**(row.meta or {}), **metadata}
        merged = {key: value for key, value in merged.items() if value is not None}
        await ensure_routing_keys_free(request.app, workspace_id=principal.workspace_id, provider=row.provider, metadata=merged)
        row.meta = merged
        await session.flush()
        answer = connection_json(row)
    runtime(request.app).forget(row.id)
    return web.json_response(answer)


@routes.delete("/connect/v1/connections/{id}")
@requires("connections.write")
async def delete_connection(request: web.Request) -> web.Response:
    """Revoke the credential at the provider where possible and delete the connection."""
    principal = principal_of(request)
    revoked = await service.disconnect(request.app, workspace_id=principal.workspace_id, connection_id=request.match_info["id"], delete=True)
    return web.json_response({"success": True, "revoked": revoked})


@routes.post("/connect/v1/connections/{id}/check-health")
@requires("connections.write")
async def check_health(request: web.Request) -> web.Response:
    """Check the connection now (refreshing an expiring token, then the provider's cheap check)."""
    principal = principal_of(request)
    result = await service.check_health(request.app, workspace_id=principal.workspace_id, connection_id=request.match_info["id"])
    result["checkedAt"] = iso(result["checkedAt"])
    return web.json_response(result, status=201)


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
@requires("connections.view")
async def connection_audit(request: web.Request) -> web.Response:
    """The audit log of calls made with the connection, newest first (cursor list): method, path
    (without query), status, duration, source, time."""
    principal = principal_of(request)
    connection_id = request.match_info["id"]
    limit = query_int(request, "limit", 50, maximum=200)
    await runtime(request.app).audit.flush()
    async with request.app[DB].session(tenant=principal.workspace_id) as session:
        await get_row(session, connection_id)  # 404 for another workspace's connection
        statement = select(ProxyCallLog).where(ProxyCallLog.connection_id == connection_id)
        if request.query.get("cursor"):
            moment, row_id = _decode_cursor(request.query["cursor"])
            statement = statement.where(or_(ProxyCallLog.created_at < moment, and_(ProxyCallLog.created_at == moment, ProxyCallLog.id < row_id)))
        rows = list(await session.scalars(statement.order_by(ProxyCallLog.created_at.desc(), ProxyCallLog.id.desc()).limit(limit + 1)))
    more = len(rows) > limit
    rows = rows[:limit]
    data = [
        {"id": r.id, "connectionId": r.connection_id, "provider": r.provider, "source": r.source, "method": r.method, "path": r.path,
         "status": r.status, "durationMs": r.duration_ms, "error": r.error, "createdAt": iso(r.created_at)}
        for r in rows
    ]  # fmt: skip
    next_cursor = _encode_cursor(rows[-1].created_at, rows[-1].id) if more and rows else None
    return web.json_response({"data": data, "nextCursor": next_cursor})


__all__ = ["routes", "connection_json", "ACTIVE_STATUSES"]
