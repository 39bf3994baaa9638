"""The unified CRM over HTTP (spec 4.19), prefix ``/api/unified``.

- ``/crm/...``: server-to-server, with the workspace's API key (or a client-credentials token);
  ``organizationId``, when given, must be the caller's workspace (else 404, as for any other tenant).
- ``/user/crm/...``: the same data for a signed-in user, with an access token of our identity
  provider (the token's ``organization_id`` is the workspace); an API key is refused with 401.

Both read live through ``connectionId`` (default: the workspace's most recently connected CRM with
unified support) and page with ``limit`` (default 20, at most 100) and ``cursor``; answers
``{"data", "nextCursor"}``.
"""

from __future__ import annotations

from aiohttp import web

from patchbay.core.http.bodies import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, query_int
from patchbay.core.http.errors import not_found, unauthorized
from patchbay.core.security.auth import Principal, principal_of, requires
from patchbay.core.unified_crm import service
from patchbay.core.unified_crm.models import RESOURCES

routes = web.RouteTableDef()
PREFIX = "/api/unified"
PERMISSION = "connections.view"


def _server_to_server(request: web.Request) -> Principal:
    principal = principal_of(request)
    organization = request.query.get("organizationId")
    if organization and organization != principal.workspace_id:
        raise not_found(f"Organization not found: {organization}")
    return principal


def _user(request: web.Request) -> Principal:
    principal = principal_of(request)
    if principal.kind != "access_token":
        raise unauthorized()
    return principal


async def _list(request: web.Request, principal: Principal, resource: str) -> web.Response:
    limit = query_int(request, "limit", DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
    page = await service.list_items(
        request.app, workspace_id=principal.workspace_id, connection_id=request.query.get("connectionId"), resource=resource,
        limit=limit, cursor=request.query.get("cursor"),
    )  # fmt: skip
    return web.json_response(page)


async def _get(request: web.Request, principal: Principal, resource: str) -> web.Response:
    item = await service.get_item(
        request.app, workspace_id=principal.workspace_id, connection_id=request.query.get("connectionId"), resource=resource,
        item_id=request.match_info["itemId"],
    )  # fmt: skip
    return web.json_response(item)


def _resource(request: web.Request) -> str:
    """The resource of the route (``.../crm/<resource>[/<id>]``)."""
    parts = request.path.split("/")
    return parts[parts.index("crm") + 1]


@routes.get(PREFIX + "/crm/providers")
@requires()
async def crm_providers(request: web.Request) -> web.Response:
    """The CRM providers with unified support and the resources each offers."""
    return web.json_response(service.supported(request.app))


@requires(PERMISSION)
async def list_crm(request: web.Request) -> web.Response:
    """Unified contacts, companies or deals of a CRM connection (server-to-server), cursor-paged."""
    return await _list(request, _server_to_server(request), _resource(request))


@requires(PERMISSION)
async def get_crm(request: web.Request) -> web.Response:
    """One unified contact, company or deal (server-to-server)."""
    return await _get(request, _server_to_server(request), _resource(request))


@requires(PERMISSION)
async def list_user_crm(request: web.Request) -> web.Response:
    """Unified contacts, companies or deals for a signed-in user's workspace, cursor-paged."""
    return await _list(request, _user(request), _resource(request))


@requires(PERMISSION)
async def get_user_crm(request: web.Request) -> web.Response:
    """One unified contact, company or deal for a signed-in user's workspace."""
    return await _get(request, _user(request), _resource(request))


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
    for resource in RESOURCES:  # one route per resource, as the spec lists them
        app.router.add_get(f"{PREFIX}/crm/{resource}", list_crm)
        app.router.add_get(f"{PREFIX}/crm/{resource}/{{itemId}}", get_crm)
        app.router.add_get(f"{PREFIX}/user/crm/{resource}", list_user_crm)
        app.router.add_get(f"{PREFIX}/user/crm/{resource}/{{itemId}}", get_user_crm)
