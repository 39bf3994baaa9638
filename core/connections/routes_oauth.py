"""The OAuth connection routes (spec 4.2, unprefixed): login, callback, refresh, deauthorize, and
the confirmation page of a login started elsewhere (``/auth/{provider}/begin``). The work is
``core.connections.oauth``'s; these routes add the binding cookie and the redirects.

Login is opened by the customer's app for its user: authenticated by the usual headers, or, for a
plain browser navigation, by ``token=<access token>`` in the query (an access token of our identity
provider; API keys never go in URLs).

After the callback the browser goes back to the login's ``redirect_uri`` with
``status=connected&connectionId=..&provider=..``, or ``status=error&error=..&error_description=..``;
without a ``redirect_uri`` a small page says what happened.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections import oauth, service
from patchbay.core.connections.api_models import PendingApproval
from patchbay.core.connections.form_models import BeginConfirmation, DeauthorizationCallback
from patchbay.core.connections.models import OAuthState
from patchbay.core.connections.oauth import HeldForApproval, StartedLogin
from patchbay.core.connections.oauth_models import Deauthorized, DeauthorizeInfo, LoginUrl, Refreshed
from patchbay.core.connections.refresh import RefreshFailed, can_refresh, refresh_connection
from patchbay.core.connections.store import deployment_app, load_state
from patchbay.core.errors import Forbidden, NotFound, Unauthenticated
from patchbay.core.http.bodies import read_form
from patchbay.core.http.errors import ApiError
from patchbay.core.http.openapi import FORM, accepts, query
from patchbay.core.http.pages import html_page
from patchbay.core.http.responses import HTML, REDIRECT, reply, returns
from patchbay.core.security.auth import Principal, authenticate, principal_of, refused, require_principal, requires, token_principal
from patchbay.core.security.refusals import CONNECT_API_CREDENTIALS, connect_token_problem, unauthorized
from patchbay.core.timeutil import iso, utcnow

log = logging.getLogger(__name__)
routes = web.RouteTableDef()

__all__ = ["HeldForApproval", "begin_login", "login_url", "routes"]

#: what starting a connection takes: a link carries its token in the URL
LOGIN_CREDENTIALS = f"{CONNECT_API_CREDENTIALS}, or a link with an access token as `token=<token>`"


def set_binding_cookie(request: web.Request, response: web.StreamResponse, state_id: str, expires_at) -> None:
    """Bind the login ``state_id`` to the browser that follows ``response`` (HttpOnly, SameSite=Lax,
    path ``/auth/``, as long as the login lives)."""
    services = request.app[SERVICES]
    lifetime = max(1, int((expires_at - utcnow()).total_seconds()))
    secure = urlsplit(services.settings.public_base_url).scheme == "https"
    response.set_cookie(
        oauth.COOKIE_PREFIX + state_id, oauth.binding_value(services, state_id), max_age=lifetime, path="/auth/", httponly=True, secure=secure, samesite="Lax"
    )


def is_bound_here(request: web.Request, state_id: str) -> bool:
    """Whether the browser sending ``request`` holds the binding cookie of the login ``state_id``."""
    return oauth.is_bound(request.app[SERVICES], state_id, request.cookies.get(oauth.COOKIE_PREFIX + state_id, ""))


async def _login_principal(request: web.Request) -> tuple[Principal, bool]:
    """The caller, and whether it was authenticated by ``token=`` in the URL (a link)."""
    principal = await authenticate(request)
    token = request.query.get("token")
    by_link = False
    if (principal is None or principal.workspace_id is None) and token:
        by_link = True
        principal = await token_principal(request.app[SERVICES], token)  # as in the header: same trust, grant and approver checks
    if principal is None and by_link:
        raise Unauthenticated(
            unauthorized(f"the `token` of the link was refused: {await connect_token_problem(request.app[SERVICES], token)}", LOGIN_CREDENTIALS)
        )
    if principal is None:
        raise await refused(request, expected=LOGIN_CREDENTIALS)
    if principal.workspace_id is None:
        raise Unauthenticated(unauthorized("the credential names no workspace (an access token needs the `organization` scope)", LOGIN_CREDENTIALS))
    if not principal.can("connections.write"):
        raise Forbidden("Missing permission: connections.write")
    return principal, by_link


def _wants_json(request: web.Request) -> bool:
    return request.query.get("response") == "json" or "application/json" in request.headers.get("Accept", "")


#: what a login answers when asked for JSON (``begin_login`` sends it for the route that called it)
login_url = returns(LoginUrl, description="The page that starts the connection, when asked for JSON")


@routes.get("/auth/{providerType}/login")
@returns(REDIRECT, status=302, description="To the provider's authorization page, or to the confirmation page of a login by link")
@login_url
@returns(PendingApproval, status=202, description="Held for approval")
@query(
    account_id={"type": "string"},
    redirect_uri={"type": "string", "format": "uri"},
    metadata={"type": "string", "description": "A JSON object"},
    scopes={"type": "string"},
    connection_id={"type": "string"},
    response={"type": "string", "enum": ["json"]},
    token={"type": "string", "description": "An access token, for a plain browser navigation"},
)
async def login(request: web.Request) -> web.StreamResponse:
    """Start the OAuth connection of a provider: 302 to the provider's authorization page.

    Query: ``account_id`` (the workspace; must be the caller's), ``redirect_uri`` (where the user
    returns afterwards), the provider's connection parameters by name (``subdomain=...``),
    ``metadata`` (a JSON object stored on the connection, e.g. ``{"page_id": "..."}``),
    ``scopes`` (space or comma separated, replacing the defaults), ``connection_id`` (re-authorize
    that connection). ``Accept: application/json`` or ``response=json`` answers
    ``{authorizationUrl}`` instead of redirecting; 202 ``{status: pending_approval, approvalId}``
    when the workspace's approval policy holds the request.
    """
    principal, by_link = await _login_principal(request)
    try:
        return await begin_login(request, principal, request.match_info["providerType"], request.query, by_link=by_link)
    except HeldForApproval as held:
        return reply(request, {"status": "pending_approval", "approvalId": held.approval_id}, status=202)


async def begin_login(request: web.Request, principal: Principal, provider_type: str, query: Mapping[str, str], *, by_link: bool = False) -> web.StreamResponse:
    """The login's work for an authenticated ``principal`` with the login's ``query`` (also used by
    the hosted connect page for its end user). ``by_link``: authenticated by a token in the URL, so
    the browser is sent to the confirmation page that binds it first. Raises
    :class:`HeldForApproval` when the workspace's approval policy holds the login; the JSON answer
    is the calling route's ``login_url`` declaration."""
    started: StartedLogin = await oauth.start_login(request.app[SERVICES], principal, provider_type, query)
    if _wants_json(request):
        return reply(request, {"authorizationUrl": started.begin_url, "expiresAt": iso(started.expires_at)})
    if by_link:
        raise web.HTTPFound(started.begin_url)
    response = web.HTTPFound(started.authorization_url)
    set_binding_cookie(request, response, started.state_id, started.expires_at)
    raise response


# ---------------------------------------------------------------------------------------------
# Callback
# ---------------------------------------------------------------------------------------------


def _back(return_to: str, values: dict[str, str]) -> web.HTTPFound:
    return web.HTTPFound(return_to + ("&" if "?" in return_to else "?") + urlencode(values))


def _fail(row: OAuthState | None, error: str, description: str) -> web.StreamResponse:
    if row is not None and row.return_to:
        raise _back(row.return_to, {"status": "error", "provider": row.provider, "error": error, "error_description": description})
    return html_page("Connection failed", description, 400)


@routes.get("/auth/{providerType}/callback")
@returns(REDIRECT, status=302, description="Back to the login's redirect_uri with the outcome")
@returns(HTML, description="The outcome, when the login named no redirect_uri")
@returns(HTML, status=400, description="The sign-in link is invalid or expired, or the provider refused")
@returns(HTML, status=403, description="The login was not started in this browser")
@query(state={"type": "string"}, code={"type": "string"}, error={"type": "string"}, error_description={"type": "string"})
async def callback(request: web.Request) -> web.StreamResponse:
    """Complete an OAuth connection: check the state, exchange the code, store the connection, and
    send the browser back to the login's ``redirect_uri`` (or show a page)."""
    services = request.app[SERVICES]
    provider = service.provider_named(services, request.match_info["providerType"])
    state = request.query.get("state", "")
    try:
        row = await oauth.take_state(services, provider.name, state, lambda state_id: is_bound_here(request, state_id)) if state else None
    except oauth.NotBound:
        return html_page("Connection failed", "This connection was not started in this browser. Start it again from your app.", 403)
    if row is None:
        return html_page("Connection failed", "This sign-in link is invalid, expired or was already used. Start the connection again.", 400)
    if row.expires_at < utcnow():
        return _fail(row, "expired_state", "The sign-in took too long. Start the connection again.")
    if request.query.get("error"):
        description = request.query.get("error_description") or request.query["error"]
        return _fail(row, request.query["error"], f"{provider.display_name}: {description}")
    code = request.query.get("code")
    if not code:
        return _fail(row, "invalid_request", f"{provider.display_name} did not return an authorization code.")
    try:
        outcome = await oauth.finish_login(services, provider, row, code)
    except ApiError as error:  # transitional: a routing key held elsewhere is still refused with an ApiError
        return _fail(row, "connection_refused", error.message)
    if outcome.connection_id is None:
        return _fail(row, outcome.error or "connection_refused", outcome.description or "")
    if row.return_to:
        raise _back(row.return_to, {"status": "connected", "provider": provider.name, "connectionId": outcome.connection_id})
    return html_page("Connected", f"{provider.display_name} is connected. You can close this window.", 200)


# ---------------------------------------------------------------------------------------------
# Confirming a login started elsewhere (``response=json`` or a link): binds it to this browser
# ---------------------------------------------------------------------------------------------


def _invalid() -> web.Response:
    return html_page("Connection failed", "This sign-in link is invalid, expired or was already used. Start the connection again.", status=400)


@routes.get("/auth/{providerType}/begin")
@returns(HTML, description="The confirmation page")
@returns(HTML, status=400, description="The sign-in link is invalid, expired or was already used")
@query(state={"type": "string"})
async def begin(request: web.Request) -> web.StreamResponse:
    """Ask the user to confirm an OAuth connect started elsewhere (``response=json`` or a link):
    names the provider and the workspace the account will be connected to."""
    services = request.app[SERVICES]
    state = request.query.get("state", "")
    provider = service.provider_named(services, request.match_info["providerType"])
    row = await oauth.pending_login(services, provider.name, state)
    if row is None:
        return _invalid()
    workspace_name = await oauth.workspace_name(services, row.workspace_id)
    return html_page(
        f"Connect {provider.display_name}",
        f"Your {provider.display_name} account will be connected to the workspace “{workspace_name}”. Continue only if you started this connection.",
        form={"action": f"/auth/{provider.name}/begin", "fields": {"state": state}, "button": "Continue"},
    )


@routes.post("/auth/{providerType}/begin")
@returns(REDIRECT, status=302, description="To the provider's authorization page, the login bound to this browser")
@returns(HTML, status=400, description="The sign-in link is invalid, expired or was already used")
@returns(HTML, status=403, description="Not posted from this service's own page")
@accepts(BeginConfirmation, media=FORM)
async def begin_confirmed(request: web.Request) -> web.StreamResponse:
    """The user's confirmation: bind the login to this browser and go on to the provider. Only a
    form posted from our own pages is accepted (``Origin`` must be this service's)."""
    services = request.app[SERVICES]
    origin = request.headers.get("Origin")
    expected = "{0.scheme}://{0.netloc}".format(urlsplit(services.settings.public_base_url))
    if origin != expected:
        return html_page("Connection failed", "Confirm the connection from its own page.", status=403)
    form = await read_form(request)
    state = form.get("state")
    provider = service.provider_named(services, request.match_info["providerType"])
    row = await oauth.pending_login(services, provider.name, state if isinstance(state, str) else "")
    if row is None or not (row.meta or {}).get("authorizationUrl"):
        return _invalid()
    response = web.HTTPFound(row.meta["authorizationUrl"])
    set_binding_cookie(request, response, row.id, row.expires_at)
    raise response


# ---------------------------------------------------------------------------------------------
# Refresh and deauthorize
# ---------------------------------------------------------------------------------------------


@routes.post("/auth/{providerType}/refresh/{accountId}")
@returns(Refreshed, status=201, description="Refreshed (or why not), per connection")
@requires("connections.write")
async def refresh(request: web.Request) -> web.Response:
    """Refresh the stored tokens of the account's connections of the provider now."""
    services = request.app[SERVICES]
    principal = principal_of(request)
    provider = service.provider_named(services, request.match_info["providerType"])
    if request.match_info["accountId"] != principal.workspace_id:
        raise NotFound(f"Account not found: {request.match_info['accountId']}")
    ids = await service.active_connection_ids(services, workspace_id=principal.workspace_id, provider=provider.name)
    if not ids:
        raise NotFound(f"No active {provider.name} connection")
    results = []
    for connection_id in ids:
        state = await load_state(services, connection_id, workspace_id=principal.workspace_id, fresh=True)
        entry: dict[str, Any] = {"connectionId": connection_id}
        if not can_refresh(services, state):
            entry.update(refreshed=False, status=state.status, reason="no refresh token")
        else:
            try:
                state = await refresh_connection(services, connection_id, workspace_id=principal.workspace_id, force=True)
                entry.update(refreshed=True, status=state.status, expiresAt=iso(state.expires_at))
            except RefreshFailed as error:
                entry.update(refreshed=False, status="invalid" if error.permanent else state.status, reason=error.message)
        results.append(entry)
    return reply(request, {"success": all(r["refreshed"] for r in results), "connections": results}, status=201)


@routes.get("/auth/{providerType}/deauthorize")
@returns(DeauthorizeInfo)
async def deauthorize_info(request: web.Request) -> web.Response:
    """What deauthorization does and where a provider or a workspace sends it."""
    services = request.app[SERVICES]
    provider = service.provider_named(services, request.match_info["providerType"])
    return reply(
        request,
        {
            "provider": provider.name,
            "deauthorizeUrl": f"{services.settings.public_base_url}/auth/{provider.name}/deauthorize",
            "description": (
                "POST here with the workspace's credentials to revoke and disconnect its connections of this provider, or, "
                "where the provider's pack reads its deauthorization callback (Meta's signed_request, say), as that callback: "
                "the connections of the user it names are disconnected."
            ),
        },
    )


@routes.post("/auth/{providerType}/deauthorize")
@returns(Deauthorized, status=201, description="The workspace's connections of the provider were disconnected")
@returns(Deauthorized, description="The provider's callback: the connections of the user it names were disconnected")
@accepts(DeauthorizationCallback, required=False, media=FORM)
async def deauthorize(request: web.Request) -> web.Response:
    """Deauthorize: a workspace's request disconnects (and revokes) its connections of the
    provider; the provider's own callback, verified by its pack (``register_deauthorization_callbacks``),
    disconnects the connections whose metadata ``user_id`` is the user who removed the app."""
    services = request.app[SERVICES]
    provider = service.provider_named(services, request.match_info["providerType"])
    principal = await authenticate(request)
    if principal is not None and principal.workspace_id is not None:
        await require_principal(request, "connections.write")
        ids = await service.active_connection_ids(services, workspace_id=principal.workspace_id, provider=provider.name)
        for connection_id in ids:
            await service.disconnect(services, workspace_id=principal.workspace_id, connection_id=connection_id)
        return reply(request, {"success": True, "disconnected": len(ids)}, status=201)
    callback = services.registry.get("deauthorization_callbacks", provider.name)
    if callback is None:
        raise await refused(request)
    app = await deployment_app(services, provider.name)  # stored at run time, else the settings file's
    user = callback.user(await read_form(request), (app.client_secret if app else None) or "")
    if user is None:
        raise Unauthenticated(
            unauthorized(
                f"the {provider.name} deauthorization callback's signature does not verify with the provider's client secret",
                f"the provider's signed callback, or {CONNECT_API_CREDENTIALS}",
            )
        )
    disconnected = await service.disconnect_provider_user(services, provider=provider.name, user_id=user)
    return reply(request, {"success": True, "disconnected": disconnected})
