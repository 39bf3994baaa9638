"""A workspace's API keys over HTTP: ``GET /connect/v1/api-keys`` lists them (never the secret),
``DELETE /connect/v1/api-keys/{id}`` revokes one. Both need ``workspace.admin``; a key of another
workspace answers 404. Keys are created with the CLI (``patchbay api-keys create``)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import DB
from patchbay.core.http.errors import not_found
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.api_keys import api_key_json, list_api_keys, revoke_api_key
from patchbay.core.security.api_models import ApiKeyList, ApiKeyRevoked
from patchbay.core.security.auth import forget_cached_api_keys, principal_of, requires

routes = web.RouteTableDef()
PREFIX = "/connect/v1/api-keys"


@routes.get(PREFIX)
@returns(ApiKeyList)
@requires("workspace.admin")
async def list_keys(request: web.Request) -> web.Response:
    """List the workspace's API keys with status, expiry and last use (never the key itself)."""
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].session(tenant=workspace_id) as session:
        keys = await list_api_keys(session, workspace_id)
    return reply(request, {"data": [api_key_json(key) for key in keys]})


@routes.delete(PREFIX + "/{id}")
@returns(ApiKeyRevoked)
@requires("workspace.admin")
async def revoke_key(request: web.Request) -> web.Response:
    """Revoke an API key of the workspace; other processes refuse it within 5 seconds."""
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        revoked = await revoke_api_key(session, request.match_info["id"], workspace_id=workspace_id)
    if not revoked:
        raise not_found("no active API key with this id in this workspace")
    forget_cached_api_keys(request.app)
    return reply(request, {"id": request.match_info["id"], "revoked": True})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
