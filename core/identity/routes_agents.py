"""``/api/v1/agent-grants``: the agents a user authorized (the grants of the agent consent page,
``core.identity.agents``), listed and revoked by that user, or revoked by their workspace's admin.

The user is the one of a user's access token (a first-party client's, as the connect API takes
it) or of the identity provider's sign-in cookie (``SameSite=Lax``: a cross-site request carries it
only on a top-level GET), when the request presents no other credential; a workspace's admin presents a credential of the workspace (API key or
client token) holding ``workspace.admin``."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.errors import Forbidden, NotFound, Unauthenticated
from patchbay.core.http.responses import reply, returns
from patchbay.core.identity.agents import grants_of_user, revoke_agent_grant
from patchbay.core.identity.api_models import AgentGrantList, Revoked
from patchbay.core.identity.session import current_session
from patchbay.core.security.auth import Principal, authenticate, refused
from patchbay.core.security.refusals import unauthorized

routes = web.RouteTableDef()
PATH = "/api/v1/agent-grants"
#: who these routes serve: a signed-in user, or a credential of the workspace
USER_CREDENTIALS = "a signed-in user's browser session or access token (`Authorization: Bearer <token>`), or a workspace API key as `x-api-key: <key>`"


def _user_of(principal: Principal | None) -> str | None:
    if principal is not None and principal.kind == "access_token" and principal.subject and principal.subject != principal.client_id:
        return principal.subject
    return None


async def _caller(request: web.Request) -> tuple[str | None, Principal | None]:
    """(the signed-in user's id or None, the request's principal or None); 401 with neither."""
    principal = await authenticate(request)
    user_id = _user_of(principal)
    presented = "Authorization" in request.headers or "x-api-key" in request.headers
    if not presented:  # the browser's sign-in, only when no credential was presented (a refused one is refused)
        session = await current_session(request)
        user_id = session.user_id if session is not None else None
    if user_id is None and principal is None:
        if presented:
            raise await refused(request, expected=USER_CREDENTIALS)
        raise Unauthenticated(unauthorized("no credential was sent and no one is signed in", USER_CREDENTIALS))
    return user_id, principal


@routes.get(PATH)
@returns(AgentGrantList)
async def list_agent_grants(request: web.Request) -> web.Response:
    """The signed-in user's active agent grants, newest first."""
    user_id, _ = await _caller(request)
    if user_id is None:
        raise Forbidden("This route needs a signed-in user")
    return reply(request, {"data": await grants_of_user(request.app[SERVICES], user_id)})


@routes.delete(PATH + "/{id}")
@returns(Revoked)
async def revoke_agent_grant_route(request: web.Request) -> web.Response:
    """Revoke an agent grant: the user's own, or (``workspace.admin``) one of the caller's
    workspace. The agent's next ``/mcp`` call and next refresh fail."""
    services = request.app[SERVICES]
    grant_id = request.match_info["id"]
    user_id, principal = await _caller(request)
    admin_of = principal.workspace_id if principal is not None and principal.workspace_id and principal.can("workspace.admin") else None
    if user_id is None and admin_of is None:
        raise Forbidden("Missing permission: workspace.admin")
    try:
        if user_id is None:
            raise NotFound("no such grant")
        await revoke_agent_grant(services, grant_id, user_id=user_id)
    except NotFound:
        if admin_of is None:
            raise
        await revoke_agent_grant(services, grant_id, workspace_id=admin_of)
    return reply(request, {"success": True})
