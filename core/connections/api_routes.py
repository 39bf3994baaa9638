"""Server-to-server connection routes (spec 4.18, prefix /api), authenticated like the connect API
(the workspace's API key in ``x-api-key``, or an access token): import existing OAuth tokens, and
a fresh access token of a connection."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from patchbay.core.appkeys import DB
from patchbay.core.approvals.service import require_ungated_or_approver
from patchbay.core.connections import service
from patchbay.core.http.bodies import read_object
from patchbay.core.http.errors import bad_request
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso

routes = web.RouteTableDef()


def _expires_at(value: Any) -> datetime | None:
    """``expiresAt`` as an ISO 8601 timestamp or epoch seconds."""
    if value in (None, ""):
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    raise bad_request("Validation failed: credentials.expiresAt must be an ISO 8601 timestamp or epoch seconds")


@routes.post("/api/connections/import")
@requires("connections.write")
async def import_connection(request: web.Request) -> web.Response:
    """Import existing OAuth tokens as a connection of the caller's workspace:
    ``{providerType, credentials: {accessToken, refreshToken?, expiresAt?}, metadata?, params?}``;
    answers 201 ``{connectionId}``. A provider the approval policy gates is imported by approvers only (403)."""
    principal = principal_of(request)
    body = await read_object(request)
    provider_type = body.get("providerType")
    credentials = body.get("credentials")
    if not isinstance(provider_type, str) or not provider_type:
        raise bad_request("Validation failed: providerType is required")
    if not isinstance(credentials, dict) or not isinstance(credentials.get("accessToken"), str) or not credentials["accessToken"]:
        raise bad_request("Validation failed: credentials.accessToken is required")
    refresh_token = credentials.get("refreshToken")
    if refresh_token is not None and not isinstance(refresh_token, str):
        raise bad_request("Validation failed: credentials.refreshToken must be a string")
    metadata, params = body.get("metadata") or {}, body.get("params") or {}
    if not isinstance(metadata, dict) or not isinstance(params, dict):
        raise bad_request("Validation failed: metadata and params must be objects")
    scopes = credentials.get("scopes") or body.get("scopes") or []
    async with request.app[DB].session(tenant=principal.workspace_id) as session:
        await require_ungated_or_approver(session, workspace_id=principal.workspace_id, provider=provider_type, principal=principal)
    row = await service.import_tokens(
        request.app, workspace_id=principal.workspace_id, provider_name=provider_type, access_token=credentials["accessToken"],
        refresh_token=refresh_token, expires_at=_expires_at(credentials.get("expiresAt")), metadata=metadata, params=params,
        scopes=[str(s) for s in scopes] if isinstance(scopes, list) else [],
    )  # fmt: skip
    return web.json_response({"connectionId": row.id, "success": True}, status=201)


@routes.get("/api/connections/{connectionId}/token")
@requires("connections.write")
async def connection_token(request: web.Request) -> web.Response:
    """A decrypted access token of the connection that is valid now (refreshed first when it is
    expired or expires within a minute): ``{accessToken, tokenType, expiresAt, connectionId}``."""
    principal = principal_of(request)
    state = await service.fresh_token(request.app, workspace_id=principal.workspace_id, connection_id=request.match_info["connectionId"])
    return web.json_response(
        {"connectionId": state.id, "provider": state.provider, "accessToken": state.access_token,
         "tokenType": state.credentials.get("token_type") or "Bearer", "expiresAt": iso(state.expires_at)},
        headers={"Cache-Control": "no-store"},
    )  # fmt: skip
