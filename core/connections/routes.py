"""Providers and connections of the connect API (spec 4.3): connect with API-key credentials,
status, disconnect, the connection list, delete, health, check-health and the audit log of calls.
The bodies read and answered are the models of ``core.connections.api_models``."""

from __future__ import annotations

from dataclasses import asdict

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections import service
from patchbay.core.connections.api_models import (
    ApiKeyCredentials,
    AuditPage,
    ConnectDto,
    Connected,
    ConnectionDeleted,
    ConnectionOut,
    ConnectionPage,
    Disconnected,
    HealthCheck,
    HealthReport,
    PendingApproval,
    ProviderStatus,
    UpdateConnectionDto,
    refuse_control_characters,
)
from patchbay.core.connections.models import CONNECTION_STATUSES
from patchbay.core.errors import Invalid
from patchbay.core.http.bodies import page_params, query_int, read_object, structure
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso

routes = web.RouteTableDef()


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
    services = request.app[SERVICES]
    provider = service.provider_named(services, request.match_info["providerType"])
    body = await read_object(request)
    dto = structure(body, ConnectDto)
    if dto.credentials is None and provider.auth_mode != "none":
        raise Invalid("Validation failed: credentials is required (an object with apiKey)")
    if dto.credentials is not None:
        refuse_control_characters(apiKey=dto.credentials.apiKey, apiSecret=dto.credentials.apiSecret)
    credentials = {key: value for key, value in asdict(dto.credentials or ApiKeyCredentials()).items() if value is not None}
    metadata, params = dto.metadata or {}, dto.params or {}
    if provider.auth_mode == "oauth2":
        raise Invalid(f"{provider.display_name} connects with OAuth: use GET /auth/{provider.name}/login")
    approval_id = await service.connect_approval(services, workspace_id=principal.workspace_id, provider=provider.name, principal=principal, payload=body)
    if approval_id is not None:
        return reply(request, {"status": "pending_approval", "approvalId": approval_id}, status=202)
    row = await service.connect_with_api_key(
        services, workspace_id=principal.workspace_id, provider_name=provider.name, credentials=credentials, metadata=metadata, params=params
    )
    return reply(request, {"success": True, "connectionId": row.id}, status=201)


@routes.get("/connect/v1/providers/{providerType}/status")
@returns(ProviderStatus)
@requires("connections.view")
async def provider_status(request: web.Request) -> web.Response:
    """The caller's connection state for a provider: ``{status, connectedAt, metadata}``."""
    principal = principal_of(request)
    services = request.app[SERVICES]
    provider = service.provider_named(services, request.match_info["providerType"])
    return reply(request, await service.provider_status(services, workspace_id=principal.workspace_id, provider=provider.name))


@routes.delete("/connect/v1/providers/{providerType}/disconnect")
@returns(Disconnected)
@requires("connections.write")
async def provider_disconnect(request: web.Request) -> web.Response:
    """Disconnect every active connection of the provider, revoking the credentials at the
    provider where it allows: ``{success, disconnected, revoked}``."""
    principal = principal_of(request)
    services = request.app[SERVICES]
    provider = service.provider_named(services, request.match_info["providerType"])
    ids = await service.active_connection_ids(services, workspace_id=principal.workspace_id, provider=provider.name)
    revoked = 0
    for connection_id in ids:
        revoked += await service.disconnect(services, workspace_id=principal.workspace_id, connection_id=connection_id)
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
    return reply(request, await service.health_report(request.app[SERVICES], workspace_id=principal.workspace_id))


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
        raise Invalid(f"Query parameter 'status' must be one of {', '.join(CONNECTION_STATUSES)}")
    data, total = await service.connection_page(
        request.app[SERVICES],
        workspace_id=principal.workspace_id,
        provider=request.query.get("provider"),
        status=status,
        end_user_id=request.query.get("endUserId"),
        page=page,
        limit=limit,
    )
    return reply(request, {"data": data, "page": page, "limit": limit, "total": total})


@routes.get("/connect/v1/connections/{id}")
@returns(ConnectionOut)
@requires("connections.view")
async def get_connection(request: web.Request) -> web.Response:
    """One connection (never its credentials)."""
    principal = principal_of(request)
    return reply(request, await service.connection_of(request.app[SERVICES], workspace_id=principal.workspace_id, connection_id=request.match_info["id"]))


@routes.patch("/connect/v1/connections/{id}")
@accepts(UpdateConnectionDto)
@returns(ConnectionOut)
@requires("connections.write")
async def update_connection(request: web.Request) -> web.Response:
    """Change a connection's metadata: ``{metadata: {...}}`` is merged into it (a key set to null
    is removed); e.g. the Facebook page whose lead webhooks belong to this connection."""
    principal = principal_of(request)
    dto = structure(await read_object(request), UpdateConnectionDto)
    answer = await service.update_metadata(
        request.app[SERVICES], workspace_id=principal.workspace_id, connection_id=request.match_info["id"], metadata=dto.metadata
    )
    return reply(request, answer)


@routes.delete("/connect/v1/connections/{id}")
@returns(ConnectionDeleted)
@requires("connections.write")
async def delete_connection(request: web.Request) -> web.Response:
    """Revoke the credential at the provider where possible and delete the connection."""
    principal = principal_of(request)
    revoked = await service.disconnect(request.app[SERVICES], workspace_id=principal.workspace_id, connection_id=request.match_info["id"], delete=True)
    return reply(request, {"success": True, "revoked": revoked})


@routes.post("/connect/v1/connections/{id}/check-health")
@returns(HealthCheck, status=201, description="Checked")
@requires("connections.write")
async def check_health(request: web.Request) -> web.Response:
    """Check the connection now (refreshing an expiring token, then the provider's cheap check)."""
    principal = principal_of(request)
    result = await service.check_health(request.app[SERVICES], workspace_id=principal.workspace_id, connection_id=request.match_info["id"])
    result["checkedAt"] = iso(result["checkedAt"])
    return reply(request, result, status=201)


@routes.get("/connect/v1/connections/{id}/audit")
@query(limit={"type": "integer", "minimum": 1, "maximum": 200, "default": 50}, cursor={"type": "string"})
@returns(AuditPage)
@requires("connections.view")
async def connection_audit(request: web.Request) -> web.Response:
    """The audit log of calls made with the connection, newest first (cursor list): method, path
    (without query), status, duration, source, time."""
    principal = principal_of(request)
    limit = query_int(request, "limit", 50, maximum=200)
    page = await service.audit_page(
        request.app[SERVICES],
        workspace_id=principal.workspace_id,
        connection_id=request.match_info["id"],
        cursor=request.query.get("cursor") or None,
        limit=limit,
    )
    return reply(request, page)
