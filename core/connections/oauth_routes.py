"""The OAuth connection routes (spec 4.2, unprefixed): login, callback, refresh, deauthorize.

Login is opened by the customer's app for its user: authenticated by the usual headers, or, for a
plain browser navigation, by ``token=<access token>`` in the query (an access token of our identity
provider; API keys never go in URLs). The ``state`` sent to the provider is the id of a stored
login (``OAuthState``) plus an HMAC binding it to the workspace, the provider, the return URL and
the callback URL; the callback deletes the row before using it, so a state works once. PKCE (S256)
is added for providers whose definition says ``pkce=True``.

After the callback the browser goes back to the login's ``redirect_uri`` with
``status=connected&connectionId=..&provider=..``, or ``status=error&error=..&error_description=..``;
without a ``redirect_uri`` a small page says what happened.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit

from aiohttp import web
from sqlalchemy import delete, select

from patchbay.core.appkeys import DB, REGISTRY, SECRETS, SERVICES, SETTINGS
from patchbay.core.http.bodies import read_form
from patchbay.core.approvals.service import gate_connect
from patchbay.core.connections import service
from patchbay.core.connections.oauth_binding import begin_url, is_bound_here, set_binding_cookie
from patchbay.core.connections.auth import ProviderAuthError, TemplateError, UnvouchedHost, auth_for, check_fillable, pkce_pair
from patchbay.core.connections.api_models import PendingApproval
from patchbay.core.connections.form_models import DeauthorizationCallback
from patchbay.core.connections.models import ByoaCredential, OAuthState
from patchbay.core.connections.oauth_models import DeauthorizeInfo, Deauthorized, LoginUrl, Refreshed
from patchbay.core.connections.refresh import RefreshFailed, can_refresh, refresh_connection
from patchbay.core.connections.store import auth_context, enforce_provider_limit, get_row, load_state, oauth_app_for, save_connection, token_credentials
from patchbay.core.http.pages import html_page
from patchbay.core.errors import DomainError
from patchbay.core.http.errors import ApiError, bad_request, not_found, unauthorized
from patchbay.core.http.openapi import FORM, accepts, query
from patchbay.core.http.responses import HTML, REDIRECT, reply, returns
from patchbay.core.security.auth import Principal, authenticate, principal_of, require_principal, requires, token_principal
from patchbay.core.timeutil import iso, utcnow

log = logging.getLogger(__name__)
routes = web.RouteTableDef()

STATE_LIFETIME = timedelta(minutes=10)


def callback_url(app: web.Application, provider: str) -> str:
    return f"{app[SETTINGS].public_base_url}/auth/{provider}/callback"


def _state_message(row: OAuthState) -> bytes:
    return "|".join((row.id, row.workspace_id, row.provider, row.return_to or "", row.callback_uri)).encode()


def _state_mac(app: web.Application, row: OAuthState) -> str:
    return app[SECRETS].sign(_state_message(row))


def state_is_authentic(app: web.Application, row: OAuthState, state: str) -> bool:
    """Whether ``state`` (``<id>.<mac>``) is the one issued for the login ``row``, under any
    configured secret key (a login started before a key rotation completes after it)."""
    state_id, _, mac = state.partition(".")
    return state_id == row.id and bool(mac) and app[SECRETS].verify_signature(_state_message(row), mac)


async def _login_principal(request: web.Request) -> tuple[Principal, bool]:
    """The caller, and whether it was authenticated by ``token=`` in the URL (a link)."""
    principal = await authenticate(request)
    token = request.query.get("token")
    by_link = False
    if (principal is None or principal.workspace_id is None) and token:
        by_link = True
        principal = await token_principal(request.app[SERVICES], token)  # as in the header: same trust, grant and approver checks
    if principal is None or principal.workspace_id is None:
        raise unauthorized()
    if not principal.can("connections.write"):
        raise ApiError(403, "Missing permission: connections.write")
    return principal, by_link


def _wants_json(request: web.Request) -> bool:
    return request.query.get("response") == "json" or "application/json" in request.headers.get("Accept", "")


def _check_return_to(value: str | None) -> str | None:
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise bad_request("Validation failed: redirect_uri must be an absolute http(s) URL")
    return value


class HeldForApproval(Exception):
    """The workspace's approval policy holds the login; each caller answers it its own way."""

    def __init__(self, approval_id: str) -> None:
        super().__init__(approval_id)
        self.approval_id = approval_id


#: what a login answers when asked for JSON (``begin_login`` sends it for the route that called it)
login_url = returns(LoginUrl, description="The page that starts the connection, when asked for JSON")


@routes.get("/auth/{providerType}/login")
@returns(REDIRECT, status=302, description="To the provider's authorization page, or to the confirmation page of a login by link")
@login_url
@returns(PendingApproval, status=202, description="Held for approval")
@query(account_id={"type": "string"}, redirect_uri={"type": "string", "format": "uri"}, metadata={"type": "string", "description": "A JSON object"},
       scopes={"type": "string"}, connection_id={"type": "string"}, response={"type": "string", "enum": ["json"]},
       token={"type": "string", "description": "An access token, for a plain browser navigation"})  # fmt: skip
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
    app = request.app
    provider = service.provider_or_404(app, provider_type)
    workspace_id = principal.workspace_id
    account_id = query.get("account_id")
    if account_id and account_id != workspace_id:
        raise not_found(f"Account not found: {account_id}")
    if provider.auth_mode != "oauth2":
        raise bad_request(f"{provider.display_name} does not connect with OAuth: use POST /connect/v1/providers/{provider.name}/connect")
    return_to = _check_return_to(query.get("redirect_uri"))
    handler = auth_for(app[REGISTRY], provider.name)
    deferred = handler.deferred_params(provider)
    params = service.split_params(provider, {k: v for k, v in query.items() if k in provider.connection_params}, None, learned=deferred)
    try:
        check_fillable(provider, params)
    except TemplateError as error:
        raise bad_request(str(error)) from None
    metadata = _metadata_query(query.get("metadata"))
    reconnect = query.get("connection_id")
    async with app[DB].transaction(tenant=workspace_id) as session:
        if reconnect:
            row = await get_row(session, reconnect)
            if row.provider != provider.name:
                raise bad_request(f"Connection {reconnect} is not a {provider.name} connection")
        approval_id = await gate_connect(app[SERVICES], session, workspace_id=workspace_id, provider=provider.name, principal=principal, payload=None)
        if approval_id is None and not reconnect:
            await enforce_provider_limit(session, workspace_id, provider.name)
    if approval_id is not None:
        raise HeldForApproval(approval_id)
    oauth_app = await oauth_app_for(app, workspace_id=workspace_id, provider=provider.name)
    if oauth_app is None:
        raise bad_request(
            f"No OAuth app is configured for {provider.display_name}: save your own with POST /byoa/{provider.name}/credentials, "
            f"or set client_id and client_secret in [providers.{provider.name}]"
        )
    try:
        ctx = auth_context(app, provider, oauth_app, params)
    except UnvouchedHost as error:
        raise bad_request(error.message) from None
    scopes = _scopes(query.get("scopes"))
    if scopes is None:
        scopes = await _byoa_scopes(app, workspace_id, provider.name) if oauth_app.source == "byoa" else None
    if not scopes:
        scopes = list(provider.scopes)
    verifier, challenge = pkce_pair() if provider.pkce else (None, None)
    state_row = OAuthState(
        workspace_id=workspace_id, provider=provider.name, return_to=return_to, callback_uri=callback_url(app, provider.name),
        code_verifier=app[SECRETS].encrypt(verifier) if verifier else None, params=params, connection_id=reconnect,
        oauth_app=oauth_app.source, expires_at=utcnow() + STATE_LIFETIME,
        meta={"scopes": scopes, "requestedBy": principal.subject, "metadata": metadata},
    )  # fmt: skip
    async with app[DB].transaction(tenant=workspace_id) as session:
        await session.execute(delete(OAuthState).where(OAuthState.expires_at < utcnow()))
        session.add(state_row)
        await session.flush()
        state = f"{state_row.id}.{_state_mac(app, state_row)}"
        url = handler.authorization_url(ctx, redirect_uri=state_row.callback_uri, state=state, scopes=scopes, code_challenge=challenge)
        state_row.meta = {**state_row.meta, "authorizationUrl": url}
    if _wants_json(request):
        return reply(request, {"authorizationUrl": begin_url(app, provider.name, state), "expiresAt": iso(state_row.expires_at)})
    if by_link:
        raise web.HTTPFound(begin_url(app, provider.name, state))
    response = web.HTTPFound(url)
    set_binding_cookie(app, response, state_row)
    raise response


def _metadata_query(value: str | None) -> dict[str, Any]:
    if not value:
        return {}
    try:
        metadata = json.loads(value)
    except ValueError:
        metadata = None
    if not isinstance(metadata, dict):
        raise bad_request("Validation failed: metadata must be a JSON object")
    return metadata


def _scopes(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [s for s in value.replace(",", " ").split() if s]


async def _byoa_scopes(app: web.Application, workspace_id: str, provider: str) -> list[str] | None:
    async with app[DB].session(tenant=workspace_id) as session:
        scopes = await session.scalar(select(ByoaCredential.scopes).where(ByoaCredential.provider == provider))
    return list(scopes) if scopes else None


# ---------------------------------------------------------------------------------------------
# Callback
# ---------------------------------------------------------------------------------------------


def _back(return_to: str, values: dict[str, str]) -> web.HTTPFound:
    return web.HTTPFound(return_to + ("&" if "?" in return_to else "?") + urlencode(values))


class _NotBound(Exception):
    """The state is genuine but this browser did not start its login (it is left for the one that did)."""


async def _take_state(request: web.Request, provider: str, state: str) -> OAuthState | None:
    """The login the state names, removed so that it works once; None when forged or unknown."""
    app = request.app
    state_id = state.partition(".")[0]
    async with app[DB].transaction() as session:
        row = await session.scalar(select(OAuthState).where(OAuthState.id == state_id))
        if row is None or row.provider != provider or not state_is_authentic(app, row, state):
            return None
        if not is_bound_here(request, row.id):
            raise _NotBound
        result = await session.execute(delete(OAuthState).where(OAuthState.id == state_id).execution_options(synchronize_session=False))
        if result.rowcount != 1:
            return None  # another callback with the same state got there first
    return row


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
    app = request.app
    provider = service.provider_or_404(app, request.match_info["providerType"])
    state = request.query.get("state", "")
    try:
        row = await _take_state(request, provider.name, state) if state else None
    except _NotBound:
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
    oauth_app = await oauth_app_for(app, workspace_id=row.workspace_id, provider=provider.name, source=row.oauth_app)
    if oauth_app is None:
        return _fail(row, "invalid_client", f"The OAuth app for {provider.display_name} is no longer configured.")
    verifier = app[SECRETS].decrypt(row.code_verifier) if row.code_verifier else None
    try:
        ctx = auth_context(app, provider, oauth_app, row.params)
        tokens = await auth_for(app[REGISTRY], provider.name).exchange_code(ctx, code=code, redirect_uri=row.callback_uri, code_verifier=verifier)
    except ProviderAuthError as error:
        return _fail(row, error.error or "exchange_failed", error.message)
    scopes = list(tokens.scopes) or list((row.meta or {}).get("scopes") or [])
    try:
        params = service.split_params(provider, {**row.params, **tokens.params}, None, from_caller=False)
    except ApiError as error:
        return _fail(row, "invalid_request", f"{provider.display_name} did not supply every connection parameter: {error.message}")
    try:
        async with app[DB].transaction(tenant=row.workspace_id) as session:
            connection = await save_connection(
                app, session, workspace_id=row.workspace_id, provider=provider.name, credentials=token_credentials(tokens),
                params=params, metadata={**dict(tokens.metadata), **((row.meta or {}).get("metadata") or {})},
                scopes=scopes, expires_at=tokens.expires_at,
                oauth_app=oauth_app.source, connection_id=row.connection_id,
            )  # fmt: skip
    except (ApiError, DomainError) as error:  # a plan limit reached since the login started
        return _fail(row, "connection_refused", error.message)
    if row.return_to:
        raise _back(row.return_to, {"status": "connected", "provider": provider.name, "connectionId": connection.id})
    return html_page("Connected", f"{provider.display_name} is connected. You can close this window.", 200)


# ---------------------------------------------------------------------------------------------
# Refresh and deauthorize
# ---------------------------------------------------------------------------------------------


@routes.post("/auth/{providerType}/refresh/{accountId}")
@returns(Refreshed, status=201, description="Refreshed (or why not), per connection")
@requires("connections.write")
async def refresh(request: web.Request) -> web.Response:
    """Refresh the stored tokens of the account's connections of the provider now."""
    app = request.app
    principal = principal_of(request)
    provider = service.provider_or_404(app, request.match_info["providerType"])
    if request.match_info["accountId"] != principal.workspace_id:
        raise not_found(f"Account not found: {request.match_info['accountId']}")
    ids = await service.active_connection_ids(app, workspace_id=principal.workspace_id, provider=provider.name)
    if not ids:
        raise not_found(f"No active {provider.name} connection")
    results = []
    for connection_id in ids:
        state = await load_state(app, connection_id, workspace_id=principal.workspace_id, fresh=True)
        entry: dict[str, Any] = {"connectionId": connection_id}
        if not can_refresh(app, state):
            entry.update(refreshed=False, status=state.status, reason="no refresh token")
        else:
            try:
                state = await refresh_connection(app, connection_id, workspace_id=principal.workspace_id, force=True)
                entry.update(refreshed=True, status=state.status, expiresAt=iso(state.expires_at))
            except RefreshFailed as error:
                entry.update(refreshed=False, status="invalid" if error.permanent else state.status, reason=error.message)
        results.append(entry)
    return reply(request, {"success": all(r["refreshed"] for r in results), "connections": results}, status=201)


@routes.get("/auth/{providerType}/deauthorize")
@returns(DeauthorizeInfo)
async def deauthorize_info(request: web.Request) -> web.Response:
    """What deauthorization does and where a provider or a workspace sends it."""
    provider = service.provider_or_404(request.app, request.match_info["providerType"])
    return reply(
        request,
        {
            "provider": provider.name,
            "deauthorizeUrl": f"{request.app[SETTINGS].public_base_url}/auth/{provider.name}/deauthorize",
            "description": (
                "POST here with the workspace's credentials to revoke and disconnect its connections of this provider, or, "
                "where the provider's pack reads its deauthorization callback (Meta's signed_request, say), as that callback: "
                "the connections of the user it names are disconnected."
            ),
        }
    )


@routes.post("/auth/{providerType}/deauthorize")
@returns(Deauthorized, status=201, description="The workspace's connections of the provider were disconnected")
@returns(Deauthorized, description="The provider's callback: the connections of the user it names were disconnected")
@accepts(DeauthorizationCallback, required=False, media=FORM)
async def deauthorize(request: web.Request) -> web.Response:
    """Deauthorize: a workspace's request disconnects (and revokes) its connections of the
    provider; the provider's own callback, verified by its pack (``register_deauthorization_callbacks``),
    disconnects the connections whose metadata ``user_id`` is the user who removed the app."""
    app = request.app
    provider = service.provider_or_404(app, request.match_info["providerType"])
    principal = await authenticate(request)
    if principal is not None and principal.workspace_id is not None:
        await require_principal(request, "connections.write")
        ids = await service.active_connection_ids(app, workspace_id=principal.workspace_id, provider=provider.name)
        for connection_id in ids:
            await service.disconnect(app, workspace_id=principal.workspace_id, connection_id=connection_id)
        return reply(request, {"success": True, "disconnected": len(ids)}, status=201)
    callback = app[REGISTRY].get("deauthorization_callbacks", provider.name)
    if callback is None:
        raise unauthorized()
    secret = app[REGISTRY].provider_secrets(provider.name).client_secret
    user = callback.user(await read_form(request), secret or "")
    if user is None:
        raise unauthorized()
    disconnected = await service.disconnect_provider_user(app, provider=provider.name, user_id=user)
    return reply(request, {"success": True, "disconnected": disconnected})
