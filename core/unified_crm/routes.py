"""The unified CRM over HTTP (spec 4.19), prefix ``/api/unified``.

- ``/crm/...``: server-to-server, with the workspace's API key (or a client-credentials token);
  ``organizationId``, when given, must be the caller's workspace (else 404, as for any other tenant).
- ``/user/crm/...``: the same data for a signed-in user, with an access token of our identity
  provider (the token's ``organization_id`` is the workspace); an API key is refused with 401.

Both read live through ``connectionId`` (default: the workspace's most recently connected CRM with
unified support) and page with ``limit`` (default 20, at most 100) and ``cursor``; answers
``{"data", "nextCursor"}``. Each resource has its own handlers, so that each route publishes the
model of its items (``core.unified_crm.api_models``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, query_int
from patchbay.core.http.errors import not_found, unauthorized
from patchbay.core.http.openapi import query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import Principal, principal_of, requires
from patchbay.core.unified_crm import service
from patchbay.core.unified_crm.api_models import ITEM_MODELS, PAGE_MODELS, CrmProvider
from patchbay.core.unified_crm.models import RESOURCES

routes = web.RouteTableDef()
PREFIX = "/api/unified"
PERMISSION = "connections.view"

_CONNECTION = {"connectionId": {"type": "string"}}
_ORGANIZATION = {"organizationId": {"type": "string"}}
_PAGING = {"limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE, "default": DEFAULT_PAGE_SIZE}, "cursor": {"type": "string"}}


def _server_to_server(request: web.Request) -> Principal:
    principal = principal_of(request)
    organization = request.query.get("organizationId")
    if organization and organization != principal.workspace_id:
        raise not_found(f"Organization not found: {organization}")
    return principal


def _user(request: web.Request) -> Principal:
    principal = principal_of(request)
    if principal.kind != "access_token":
        raise unauthorized(
            "Unauthorized: this route acts for a signed-in user, and an API key names none; send a user's access token as `Authorization: Bearer <token>`"
        )
    return principal


@routes.get(PREFIX + "/crm/providers")
@returns(list[CrmProvider])
@requires()
async def crm_providers(request: web.Request) -> web.Response:
    """The CRM providers with unified support and the resources each offers."""
    return reply(request, service.supported(request.app[SERVICES]))


def _list_handler(resource: str, caller: Callable[[web.Request], Principal], name: str, doc: str, parameters: dict[str, Any]):
    """The handler listing ``resource`` for the principal ``caller`` accepts."""

    async def handler(request: web.Request) -> web.Response:
        principal = caller(request)
        limit = query_int(request, "limit", DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        page = await service.list_items(
            request.app[SERVICES],
            workspace_id=principal.workspace_id,
            connection_id=request.query.get("connectionId"),
            resource=resource,
            limit=limit,
            cursor=request.query.get("cursor"),
        )
        return reply(request, page)

    handler.__name__ = handler.__qualname__ = name
    handler.__doc__ = doc
    return query(**parameters)(returns(PAGE_MODELS[resource])(requires(PERMISSION)(handler)))


def _get_handler(resource: str, caller: Callable[[web.Request], Principal], name: str, doc: str, parameters: dict[str, Any]):
    """The handler reading one item of ``resource`` for the principal ``caller`` accepts."""

    async def handler(request: web.Request) -> web.Response:
        principal = caller(request)
        item = await service.get_item(
            request.app[SERVICES],
            workspace_id=principal.workspace_id,
            connection_id=request.query.get("connectionId"),
            resource=resource,
            item_id=request.match_info["itemId"],
        )
        return reply(request, item)

    handler.__name__ = handler.__qualname__ = name
    handler.__doc__ = doc
    return query(**parameters)(returns(ITEM_MODELS[resource])(requires(PERMISSION)(handler)))


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
    for resource in RESOURCES:  # one route per resource, as the spec lists them
        app.router.add_get(
            f"{PREFIX}/crm/{resource}",
            _list_handler(
                resource,
                _server_to_server,
                "list_crm",
                f"Unified {resource} of a CRM connection (server-to-server), cursor-paged.",
                {**_CONNECTION, **_ORGANIZATION, **_PAGING},
            ),
        )
        app.router.add_get(
            f"{PREFIX}/crm/{resource}/{{itemId}}",
            _get_handler(resource, _server_to_server, "get_crm", f"One unified item of {resource} (server-to-server).", {**_CONNECTION, **_ORGANIZATION}),
        )
        app.router.add_get(
            f"{PREFIX}/user/crm/{resource}",
            _list_handler(resource, _user, "list_user_crm", f"Unified {resource} for a signed-in user's workspace, cursor-paged.", {**_CONNECTION, **_PAGING}),
        )
        app.router.add_get(
            f"{PREFIX}/user/crm/{resource}/{{itemId}}",
            _get_handler(resource, _user, "get_user_crm", f"One unified item of {resource} for a signed-in user's workspace.", _CONNECTION),
        )
