"""The connect session API (server to server, prefix /connect/v1): create, list, get, revoke."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.connect_ui import service
from patchbay.core.connect_ui.api_models import (
    ALLOWED_PROVIDERS_ERROR,
    ConnectSessionOut,
    ConnectSessionOutPage,
    CreateConnectSessionDto,
    CreatedConnectSession,
)
from patchbay.core.errors import Invalid
from patchbay.core.http.bodies import page_params, read_object, structure
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


async def read_session_request(request: web.Request) -> CreateConnectSessionDto:
    """The body as :class:`CreateConnectSessionDto` (400 naming a field of the wrong type).
    ``allowedProviders`` that is not a list is refused here: cattrs would read a string as the list
    of its characters."""
    body = await read_object(request)
    if body.get("allowedProviders") is not None and not isinstance(body["allowedProviders"], list):
        raise Invalid(f"Validation failed: {ALLOWED_PROVIDERS_ERROR}")
    return structure(body, CreateConnectSessionDto)


@routes.post("/connect/v1/connect-sessions")
@accepts(CreateConnectSessionDto)
@returns(CreatedConnectSession, status=201, description="Created")
@requires("connections.write")
async def create_session(request: web.Request) -> web.Response:
    """Create a connect session for an end user: ``{endUser: {id, email?, displayName?},
    allowedProviders?, metadata?, returnUrl?, reconnectConnectionId?, expiresInMinutes?}``;
    answers 201 with the session, its ``token`` (shown once) and the hosted page's ``url``."""
    principal = principal_of(request)
    services = request.app[SERVICES]
    row, token = await service.create_session(services, principal.workspace_id, await read_session_request(request))
    return reply(request, {**service.session_json(row), "token": token, "url": service.hosted_url(services, token)}, status=201)


@routes.get("/connect/v1/connect-sessions")
@query(**PAGE_QUERY, endUserId={"type": "string"})
@returns(ConnectSessionOutPage)
@requires("connections.view")
async def list_sessions(request: web.Request) -> web.Response:
    """The workspace's connect sessions, newest first; ``?endUserId=`` filters."""
    principal = principal_of(request)
    page, limit = page_params(request)
    rows, total = await service.list_sessions(request.app[SERVICES], principal.workspace_id, end_user_id=request.query.get("endUserId"), page=page, limit=limit)
    return reply(request, {"data": [service.session_json(row) for row in rows], "page": page, "limit": limit, "total": total})


@routes.get("/connect/v1/connect-sessions/{id}")
@returns(ConnectSessionOut)
@requires("connections.view")
async def get_session(request: web.Request) -> web.Response:
    """One connect session (never its token)."""
    principal = principal_of(request)
    row = await service.get_session(request.app[SERVICES], principal.workspace_id, request.match_info["id"])
    return reply(request, service.session_json(row))


@routes.delete("/connect/v1/connect-sessions/{id}")
@returns(ConnectSessionOut)
@requires("connections.write")
async def revoke_session(request: web.Request) -> web.Response:
    """Revoke a session: its token no longer opens the page."""
    principal = principal_of(request)
    row = await service.revoke_session(request.app[SERVICES], principal.workspace_id, request.match_info["id"])
    return reply(request, service.session_json(row))
