"""Bring-your-own-app credentials (spec 4.20): a workspace's own OAuth client for a provider, used
by its OAuth logins and refreshes instead of the deployment's (``core.connections.byoa``)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections import byoa, service
from patchbay.core.connections.api_models import SaveByoaCredentialDto
from patchbay.core.connections.oauth_models import ByoaDeleted, ByoaSaved, ByoaStatus
from patchbay.core.http.bodies import read_body
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


@routes.post("/byoa/{providerType}/credentials")
@accepts(SaveByoaCredentialDto)
@returns(ByoaSaved, status=201, description="Saved")
@requires("connections.write")
async def save_credentials(request: web.Request) -> web.Response:
    """Save the workspace's OAuth app for the provider; replaces an earlier one."""
    principal = principal_of(request)
    services = request.app[SERVICES]
    provider = service.provider_named(services, request.match_info["providerType"])
    byoa.require_oauth(provider)
    dto = await read_body(request, SaveByoaCredentialDto)
    answer = await byoa.save(
        services, workspace_id=principal.workspace_id, provider=provider, client_id=dto.clientId, client_secret=dto.clientSecret, scopes=dto.scopes
    )
    return reply(request, {"success": True, **answer}, status=201)


@routes.get("/byoa/{providerType}/credentials")
@returns(ByoaStatus)
@requires("connections.view")
async def credentials_status(request: web.Request) -> web.Response:
    """Whether the workspace has its own OAuth app for the provider (never the secret)."""
    principal = principal_of(request)
    services = request.app[SERVICES]
    provider = service.provider_named(services, request.match_info["providerType"])
    return reply(request, await byoa.status(services, workspace_id=principal.workspace_id, provider=provider.name))


@routes.delete("/byoa/{providerType}/credentials")
@returns(ByoaDeleted)
@requires("connections.write")
async def delete_credentials(request: web.Request) -> web.Response:
    """Remove the workspace's OAuth app for the provider (later logins use the deployment's)."""
    principal = principal_of(request)
    services = request.app[SERVICES]
    provider = service.provider_named(services, request.match_info["providerType"])
    await byoa.delete(services, workspace_id=principal.workspace_id, provider=provider.name)
    return reply(request, {"success": True})
