"""``GET|POST /api/v1/oidc/authorize`` and the continuation shared with the login, consent and
federation callbacks: validate (authlib), authenticate (session, prompt, max_age, id_token_hint,
idp hint), obtain consent, then issue the code with ``iss`` (RFC 9207)."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

from aiohttp import web
from authlib.oauth2.rfc6749 import OAuth2Error
from multidict import MultiDict

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import read_form
from patchbay.core.http.openapi import FORM, accepts, query_model
from patchbay.core.http.responses import REDIRECT, returns
from patchbay.core.identity.claims import UserFacts
from patchbay.core.identity.clients import Client
from patchbay.core.identity.errors import OAuthRefusal
from patchbay.core.identity.http import PREFIX, add_route, client_ip, oauth_error, oauth_request, rate_limit
from patchbay.core.identity.protocol_models import AuthorizationRequest, oauth_errors
from patchbay.core.identity.resources import requested_resource
from patchbay.core.identity.server import CURRENT, apply_writes, error_redirect
from patchbay.core.identity.service import consent_covers, new_context, resolve_client, user_facts
from patchbay.core.identity.session import INTERACTION_SECONDS, LoginSession, current_session, seal, start_session, unseal
from patchbay.core.security.signing_keys import InvalidToken

routes = web.RouteTableDef()


def redirect(location: str, *, post: bool) -> web.Response:
    """302 after a GET, 303 after a POST (so the browser does not repeat the POST)."""
    return web.Response(status=303 if post else 302, headers={"Location": location, "Cache-Control": "no-store"})


def error_to_client(request: web.Request, params: dict[str, Any], error: str, description: str) -> web.Response:
    issuer = request.app[SERVICES].settings.resolved_issuer
    return redirect(error_redirect(params["redirect_uri"], error, description, params.get("state"), issuer), post=request.method == "POST")


def interaction_url(request: web.Request, page: str, params: dict[str, Any]) -> str:
    return f"{PREFIX}/{page}?" + urlencode({"interaction": seal(request.app[SERVICES], "interaction", {"p": params}, INTERACTION_SECONDS)})


def read_interaction(request: web.Request, value: str | None) -> dict[str, Any] | None:
    data = unseal(request.app[SERVICES], "interaction", value)
    return data["p"] if data else None


def federation_hint(request: web.Request, params: dict[str, Any]) -> str | None:
    """The ``idp`` (or legacy ``kc_idp_hint``) when it names a configured provider; else None."""
    name = params.get("idp") or params.get("kc_idp_hint")
    services = request.app[SERVICES]
    table = services.settings.federation.get(name or "")
    if not table or services.registry.get("federated_login", table.get("protocol", "oidc")) is None:
        return None
    return name


async def proceed(
    request: web.Request,
    params: dict[str, Any],
    client: Client,
    *,
    session: LoginSession | None = None,
    fresh_login: bool = False,
    consented: bool = False,
    agent_grant: str | None = None,
) -> web.Response:
    """Continue an authorization request whose client and redirect_uri are already validated.
    ``agent_grant``: the grant the consent page just made for an agent (a request of a ``resource``),
    whose code then carries it."""
    services = request.app[SERVICES]
    post = request.method == "POST"
    session = session or await current_session(request)
    facts: UserFacts | None = await user_facts(services, session.user_id) if session is not None else None
    ctx = new_context(services)
    ctx.clients[client.client_id] = client
    ctx.clients[client.public_id] = client  # a metadata document's URL, as the request names it
    ctx.auth_time = session.auth_time if session else None
    ctx.session_id = session.id if session else None
    CURRENT.set(ctx)
    server = services.identity.server
    oauth = oauth_request(request, MultiDict(params))
    try:
        grant = server.get_consent_grant(oauth, end_user=facts)
    except OAuth2Error as error:
        return error_to_client(request, params, error.error, error.description or error.error)
    try:
        ctx.resource = requested_resource(services, params.get("resource"))
    except OAuthRefusal as error:
        return error_to_client(request, params, error.error, error.message)

    prompts = (params.get("prompt") or "").split()
    need_login = facts is None
    if not fresh_login and facts is not None:
        if "login" in prompts:
            need_login = True
        max_age = params.get("max_age")
        if max_age is not None:
            try:
                if time.time() - session.auth_time >= int(max_age):
                    need_login = True
            except ValueError:
                return error_to_client(request, params, "invalid_request", "max_age must be a whole number of seconds")
        hint = params.get("id_token_hint")
        if hint:
            try:
                claims = await services.signing_keys.verify(hint)
            except InvalidToken:
                return error_to_client(request, params, "invalid_request", "id_token_hint is not a valid ID token of this issuer")
            if claims.get("iss") != services.settings.resolved_issuer:
                return error_to_client(request, params, "invalid_request", "id_token_hint was issued by another issuer")
            if claims.get("sub") != facts.id:
                need_login = True
    if need_login:
        if "none" in prompts:
            return error_to_client(request, params, "login_required", "the user is not signed in")
        idp = federation_hint(request, params) if facts is None else None
        if idp is not None:
            from patchbay.core.identity.routes_federation import start_federation

            return await start_federation(request, params, idp)
        return redirect(interaction_url(request, "login", params), post=post)

    if ctx.resource is not None and agent_grant is None:  # an agent gets what the user picks, each time
        if "none" in prompts:
            return error_to_client(request, params, "consent_required", "an agent's authorization needs the user to choose its connections")
        return redirect(interaction_url(request, "consent", params), post=post)
    if ctx.resource is None and not consented and ("consent" in prompts or not await consent_covers(services, facts.id, client.client_id, oauth.scope)):
        if "none" in prompts:
            return error_to_client(request, params, "consent_required", "the user has not consented to these scopes")
        return redirect(interaction_url(request, "consent", params), post=post)

    ctx.agent_grant_id = agent_grant
    result = server.create_authorization_response(oauth, grant_user=facts, grant=grant)
    await apply_writes(services.db, ctx)
    return redirect(result.location, post=post)


#: where an authorization goes on: 302 after a GET, 303 after a POST (the login and consent forms)
GOES_ON = "To the login or consent page, the federated provider, or the client's redirect_uri with the code or the error"
goes_on_after_get = returns(REDIRECT, status=302, description=GOES_ON)
goes_on_after_post = returns(REDIRECT, status=303, description=GOES_ON)


@goes_on_after_get
@goes_on_after_post
@oauth_errors
@query_model(AuthorizationRequest, method="GET")
@accepts(AuthorizationRequest, media=FORM, method="POST")
async def authorize(request: web.Request) -> web.Response:
    """Start an authorization: validate it, then send the browser to login, consent or the client."""
    params = request.query if request.method == "GET" else await read_form(request)
    headers = await rate_limit(request, "oidc_authorize", f"ip:{client_ip(request)}")
    duplicated = sorted({key for key in params if len(params.getall(key)) > 1})
    if "client_id" in duplicated or "redirect_uri" in duplicated:
        return oauth_error(400, "invalid_request", "client_id and redirect_uri must be sent once", headers)
    try:
        client = await resolve_client(request.app[SERVICES], params.get("client_id"))
    except OAuthRefusal as error:  # a metadata document that cannot be used
        return oauth_error(400, error.error, error.message, headers)
    if client is None:
        return oauth_error(400, "invalid_client", "unknown or missing client_id", headers)
    redirect_uri = params.get("redirect_uri")
    if not redirect_uri or not client.check_redirect_uri(redirect_uri):
        return oauth_error(400, "invalid_request", "redirect_uri is missing or not registered for this client", headers)
    single = {key: params.get(key) for key in params}
    for name in ("request", "request_uri"):  # request objects are not supported (discovery says so)
        if name in single:
            return error_to_client(request, single, f"{name}_not_supported", f"the {name} parameter is not supported")
    if single.get("response_mode", "query") != "query":
        return error_to_client(request, single, "invalid_request", "response_mode must be query")
    if duplicated:
        return error_to_client(request, single, "invalid_request", f"parameter(s) sent more than once: {', '.join(duplicated)}")
    return await proceed(request, single, client)


add_route(routes, ("GET", "POST"), f"{PREFIX}/authorize", authorize)


async def continue_signed_in(request: web.Request, params: dict[str, Any], client: Client, user_id: str) -> web.Response:
    """After a login (password or federated): start the session and resume the authorization."""
    carrier = web.Response()
    session = await start_session(request, carrier, user_id)
    response = await proceed(request, params, client, session=session, fresh_login=True)
    for cookie in carrier.cookies.values():
        response.cookies[cookie.key] = cookie
    return response
