"""Server-to-server connection routes (spec 4.18, prefix /api), authenticated like the connect API
(the workspace's API key in ``x-api-key``, or an access token): import existing OAuth tokens, and
a fresh access token of a connection."""

from __future__ import annotations

from datetime import UTC, datetime

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections import service
from patchbay.core.connections.api_models import AccessToken, ImportConnectionDto, ImportedConnection, refuse_control_characters
from patchbay.core.errors import Invalid
from patchbay.core.http.bodies import read_body
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso

routes = web.RouteTableDef()


def _expires_at(value: str | float | None) -> datetime | None:
    """``expiresAt`` as an ISO 8601 timestamp or epoch seconds."""
    if value in (None, ""):
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            raise Invalid("Validation failed: credentials.expiresAt is out of range") from None
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    raise Invalid("Validation failed: credentials.expiresAt must be an ISO 8601 timestamp or epoch seconds")


@routes.post("/api/connections/import")
@accepts(ImportConnectionDto)
@returns(ImportedConnection, status=201, description="Imported")
@requires("connections.write")
async def import_connection(request: web.Request) -> web.Response:
    """Import existing OAuth tokens as a connection of the caller's workspace:
    ``{providerType, credentials: {accessToken, refreshToken?, expiresAt?}, metadata?, params?}``;
    answers 201 ``{connectionId}``. A provider the approval policy gates is imported by approvers only (403)."""
    principal = principal_of(request)
    dto = await read_body(request, ImportConnectionDto)
    if not dto.providerType:
        raise Invalid("Validation failed: providerType is required")
    if not dto.credentials.accessToken:
        raise Invalid("Validation failed: credentials.accessToken is required")
    refuse_control_characters(accessToken=dto.credentials.accessToken)
    services = request.app[SERVICES]
    await service.require_import_allowed(services, workspace_id=principal.workspace_id, provider=dto.providerType, principal=principal)
    row = await service.import_tokens(
        services,
        workspace_id=principal.workspace_id,
        provider_name=dto.providerType,
        access_token=dto.credentials.accessToken,
        refresh_token=dto.credentials.refreshToken,
        expires_at=_expires_at(dto.credentials.expiresAt),
        metadata=dto.metadata or {},
        params=dto.params or {},
        scopes=dto.credentials.scopes or dto.scopes or [],
    )
    return reply(request, {"connectionId": row.id, "success": True}, status=201)


@routes.get("/api/connections/{connectionId}/token")
@returns(AccessToken)
@requires("connections.write")
async def connection_token(request: web.Request) -> web.Response:
    """A decrypted access token of the connection that is valid now (refreshed first when it is
    expired or expires within a minute): ``{accessToken, tokenType, expiresAt, connectionId}``."""
    principal = principal_of(request)
    state = await service.fresh_token(request.app[SERVICES], workspace_id=principal.workspace_id, connection_id=request.match_info["connectionId"])
    return reply(
        request,
        {
            "connectionId": state.id,
            "provider": state.provider,
            "accessToken": state.access_token,
            "tokenType": state.credentials.get("token_type") or "Bearer",
            "expiresAt": iso(state.expires_at),
        },
        headers={"Cache-Control": "no-store"},
    )
