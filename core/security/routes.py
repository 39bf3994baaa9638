"""A workspace's API keys over HTTP: ``GET /connect/v1/api-keys`` lists them (never the secret),
``DELETE /connect/v1/api-keys/{id}`` revokes one. Both need ``workspace.admin``; a key of another
workspace answers 404. Keys are created with the CLI (``patchbay api-keys create``)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.api_keys import api_key_json
from patchbay.core.security.api_models import ApiKeyList, ApiKeyRevoked
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.security.service import revoke_workspace_api_key, workspace_api_keys
from patchbay.core.workspaces.audit import Actor

routes = web.RouteTableDef()
PREFIX = "/connect/v1/api-keys"


@routes.get(PREFIX)
@returns(ApiKeyList)
@requires("workspace.admin")
async def list_keys(request: web.Request) -> web.Response:
    """List the workspace's API keys with status, expiry and last use (never the key itself)."""
    keys = await workspace_api_keys(request.app[SERVICES], principal_of(request).workspace_id)
    return reply(request, {"data": [api_key_json(key) for key in keys]})


@routes.delete(PREFIX + "/{id}")
@returns(ApiKeyRevoked)
@requires("workspace.admin")
async def revoke_key(request: web.Request) -> web.Response:
    """Revoke an API key of the workspace; other processes refuse it within 5 seconds."""
    principal = principal_of(request)
    await revoke_workspace_api_key(request.app[SERVICES], principal.workspace_id, request.match_info["id"], actor=Actor.of(principal))
    return reply(request, {"id": request.match_info["id"], "revoked": True})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
