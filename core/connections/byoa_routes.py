"""Bring-your-own-app credentials (spec 4.20): a workspace's own OAuth client for a provider, used
by its OAuth logins and refreshes instead of the deployment's. The secret is stored encrypted and
never shown again."""

from __future__ import annotations

from aiohttp import web
from sqlalchemy import select

from patchbay.core.appkeys import DB, SECRETS
from patchbay.core.connections import service
from patchbay.core.connections.api_models import SaveByoaCredentialDto
from patchbay.core.connections.models import ByoaCredential
from patchbay.core.connections.oauth_models import ByoaDeleted, ByoaSaved, ByoaStatus
from patchbay.core.http.bodies import read_body
from patchbay.core.http.errors import bad_request, not_found
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso

routes = web.RouteTableDef()


async def _find(session, provider: str) -> ByoaCredential | None:
    return await session.scalar(select(ByoaCredential).where(ByoaCredential.provider == provider))


def _status(row: ByoaCredential | None, provider: str) -> dict:
    if row is None:
        return {"provider": provider, "configured": False}
    return {"provider": provider, "configured": True, "clientId": row.client_id, "scopes": row.scopes or [],
            "createdAt": iso(row.created_at), "updatedAt": iso(row.updated_at)}  # fmt: skip


@routes.post("/byoa/{providerType}/credentials")
@accepts(SaveByoaCredentialDto)
@returns(ByoaSaved, status=201, description="Saved")
@requires("connections.write")
async def save_credentials(request: web.Request) -> web.Response:
    """Save the workspace's OAuth app for the provider (SaveByoaCredentialDto:
    ``{clientId, clientSecret, scopes?}``); replaces an earlier one."""
    principal = principal_of(request)
    provider = service.provider_or_404(request.app, request.match_info["providerType"])
    if provider.auth_mode not in ("oauth2",):
        raise bad_request(f"{provider.display_name} does not use an OAuth app")
    dto = await read_body(request, SaveByoaCredentialDto)
    client_id, client_secret, scopes = dto.clientId, dto.clientSecret, dto.scopes
    if isinstance(scopes, str):
        scopes = [s for s in scopes.replace(",", " ").split() if s]
    async with request.app[DB].transaction(tenant=principal.workspace_id) as session:
        row = await _find(session, provider.name)
        if row is None:
            row = ByoaCredential(provider=provider.name)
            session.add(row)
        row.client_id = client_id.strip()
        row.client_secret = request.app[SECRETS].encrypt(client_secret)
        row.scopes = list(scopes or [])
        await session.flush()
        answer = _status(row, provider.name)
    return reply(request, {"success": True, **answer}, status=201)


@routes.get("/byoa/{providerType}/credentials")
@returns(ByoaStatus)
@requires("connections.view")
async def credentials_status(request: web.Request) -> web.Response:
    """Whether the workspace has its own OAuth app for the provider (never the secret)."""
    principal = principal_of(request)
    provider = service.provider_or_404(request.app, request.match_info["providerType"])
    async with request.app[DB].session(tenant=principal.workspace_id) as session:
        row = await _find(session, provider.name)
    return reply(request, _status(row, provider.name))


@routes.delete("/byoa/{providerType}/credentials")
@returns(ByoaDeleted)
@requires("connections.write")
async def delete_credentials(request: web.Request) -> web.Response:
    """Remove the workspace's OAuth app for the provider (later logins use the deployment's)."""
    principal = principal_of(request)
    provider = service.provider_or_404(request.app, request.match_info["providerType"])
    async with request.app[DB].transaction(tenant=principal.workspace_id) as session:
        row = await _find(session, provider.name)
        if row is None:
            raise not_found(f"No BYOA credentials for {provider.name}")
        await session.delete(row)
    return reply(request, {"success": True})
