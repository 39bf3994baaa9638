"""The login, consent and signout pages (aiohttp-jinja2, branded, no JavaScript needed, CSRF
protected, 303 after every POST, never framed) and RP-initiated logout (``end-session``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.errors import Forbidden, Invalid
from patchbay.core.http.bodies import read_form
from patchbay.core.http.openapi import FORM, accepts, form_model, query, query_model
from patchbay.core.http.responses import HTML, REDIRECT, returns
from patchbay.core.identity.agents import agent_origin, grant_to_agent, grantable_workspaces, vouched_for, workspace_connections
from patchbay.core.identity.claims import SCOPE_DESCRIPTIONS, scope_list
from patchbay.core.identity.http import PREFIX, add_route, client_ip, rate_limit
from patchbay.core.identity.protocol_models import ConsentForm, EndSessionRequest, LoginForm, SignOutConfirmation, oauth_errors
from patchbay.core.identity.routes_authorize import (
    continue_signed_in,
    error_to_client,
    goes_on_after_post,
    interaction_url,
    proceed,
    read_interaction,
    redirect,
)
from patchbay.core.identity.service import (
    check_password,
    client_borrows_a_name,
    load_client,
    remember_consent,
    revoke_refresh_tokens,
    sessions_of_grant,
    sign_out,
    user_facts,
)
from patchbay.core.identity.session import LoginSession, check_csrf, clear_cookie, csrf_token, current_session, seal, unseal
from patchbay.core.security.signing_keys import InvalidToken
from patchbay.core.users.service import normalise_email

routes = web.RouteTableDef()
JINJA = web.AppKey("oidc_jinja", jinja2.Environment)
PAGE_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'; default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; form-action 'self' http: https:",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


#: the pages' declarations; their other refusals (429, an unknown method) are OAuth errors
a_page = returns(HTML, description="The page")
expired_link = returns(HTML, status=400, description="The interaction link expired or is not valid")
expired_form = returns(HTML, status=403, description="The form expired (CSRF)")
#: the query of the login and consent pages
INTERACTION = {"type": "string", "description": "The sealed authorization request the page continues"}


def render(request: web.Request, template: str, context: dict[str, Any], *, status: int = 200, form: bool = True) -> web.Response:
    response = web.Response(status=status, content_type="text/html", headers=PAGE_HEADERS)
    if form:
        context["csrf"] = csrf_token(request, response)
    context["brand"] = request.app[SERVICES].settings.branding
    response.text = aiohttp_jinja2.render_string(template, request, context, app_key=JINJA)
    return response


def message(request: web.Request, title: str, text: str, status: int) -> web.Response:
    return render(request, "message.html", {"title": title, "text": text}, status=status, form=False)


async def _interaction(request: web.Request, value: str | None):
    params = read_interaction(request, value)
    if params is None:
        return None, None
    client = await load_client(request.app[SERVICES], params.get("client_id"))
    if client is None or not client.check_redirect_uri(params.get("redirect_uri", "")):
        return None, None
    return params, client


# -- login ----------------------------------------------------------------------------------------


async def throttle_login(request: web.Request, email: str) -> None:
    """Count a login attempt per client address and per account (two windows, so the wait grows
    from a minute to an hour); the 429 of 7B once one is exceeded."""
    await rate_limit(request, "oidc_login_ip", f"ip:{client_ip(request)}")
    account = request.app[SERVICES].secrets.digest(normalise_email(email))  # no addresses in the counter table
    await rate_limit(request, "oidc_login_account", account)
    await rate_limit(request, "oidc_login_account_hourly", account)


@a_page
@expired_link
@oauth_errors
@query(interaction=INTERACTION)
async def login_page(request: web.Request) -> web.Response:
    """The branded login page of an authorization request."""
    params, client = await _interaction(request, request.query.get("interaction"))
    if params is None:
        return message(request, "Sign-in link expired", "Go back to the application and start again.", 400)
    return render(
        request, "login.html", {"interaction": request.query["interaction"], "client": client, "email": params.get("login_hint") or "", "error": None}
    )


@goes_on_after_post
@expired_link
@returns(HTML, status=401, description="The login page again: the email or password is not correct")
@expired_form
@oauth_errors
@accepts(LoginForm, media=FORM)
async def login_submit(request: web.Request) -> web.Response:
    """Check the email and password, start the session and continue the authorization."""
    form = await read_form(request)
    params, client = await _interaction(request, form.get("interaction"))
    if params is None:
        return message(request, "Sign-in link expired", "Go back to the application and start again.", 400)
    if not check_csrf(request, form.get("csrf")):
        return message(request, "Form expired", "Reload the page and try again.", 403)
    email = (form.get("email") or "").strip()
    await throttle_login(request, email)
    user_id = await check_password(request.app[SERVICES], email, form.get("password") or "")
    if user_id is None:
        return render(
            request,
            "login.html",
            {"interaction": form["interaction"], "client": client, "email": email, "error": "The email or password is not correct."},
            status=401,
        )
    return await continue_signed_in(request, params, client, user_id)


# -- consent --------------------------------------------------------------------------------------


@a_page
@expired_link
@oauth_errors
@query(interaction=INTERACTION, workspace={"type": "string", "description": "An agent's authorization: the workspace whose connections to show"})
async def consent_page(request: web.Request) -> web.Response:
    """What the application asks for, to allow or deny."""
    params, client = await _interaction(request, request.query.get("interaction"))
    session = await current_session(request)
    if params is None or session is None:
        return message(request, "Consent link expired", "Go back to the application and start again.", 400)
    if params.get("resource"):
        return await agent_consent(request, request.query["interaction"], params, client, session.user_id, request.query.get("workspace"))
    scopes = [(scope, SCOPE_DESCRIPTIONS.get(scope, scope)) for scope in scope_list(params.get("scope") or "openid")]
    borrowed = await client_borrows_a_name(request.app[SERVICES], client)
    account = await user_facts(request.app[SERVICES], session.user_id)
    if account is None:  # the account was deleted while signed in: sign in again
        return message(request, "Consent link expired", "Go back to the application and start again.", 400)
    return render(
        request,
        "consent.html",
        {
            "interaction": request.query["interaction"],
            "client": client,
            "scopes": scopes,
            "redirect_host": shown_host(params["redirect_uri"]),
            "borrowed_name": borrowed,
            "account": account,
        },
    )


async def agent_consent(
    request: web.Request,
    interaction: str,
    params: dict[str, Any],
    client,
    user_id: str,
    workspace_id: str | None,
    *,
    error: str | None = None,
    status: int = 200,
) -> web.Response:
    """The consent page of an agent (an authorization of the MCP server): who it is, the workspace,
    and the connections to give it."""
    services = request.app[SERVICES]
    workspaces = await grantable_workspaces(services, user_id)
    workspace = next((item for item in workspaces if item.id == workspace_id), workspaces[0] if workspaces else None)
    connections = await workspace_connections(services, workspace.id) if workspace else []
    context = {
        "interaction": interaction,
        "account": await user_facts(services, user_id),
        "redirect_host": shown_host(params["redirect_uri"]),
        "client": client,
        "origin": shown_host(f"https://{agent_origin(client, params['redirect_uri'])}"),
        "verified": vouched_for(services, client, params["redirect_uri"]),
        "workspaces": workspaces,
        "workspace": workspace,
        "connections": connections,
        "error": error,
    }
    return render(request, "agent_consent.html", context, status=status)


async def agent_decision(request: web.Request, form, params: dict[str, Any], client, session: LoginSession) -> web.Response:
    """Allow (a grant of the chosen workspace's chosen connections, then the code) or deny."""
    if form.get("decision") != "allow":
        return error_to_client(request, params, "access_denied", "the user denied the request")
    workspace_id = form.get("workspace") or ""
    connection_ids = form.getall("connection", [])
    if not connection_ids:
        return await agent_consent(
            request, form["interaction"], params, client, session.user_id, workspace_id, error="Choose at least one connection.", status=400
        )
    try:
        grant = await grant_to_agent(request.app[SERVICES], user_id=session.user_id, client=client, workspace_id=workspace_id, connection_ids=connection_ids)
    except (Forbidden, Invalid) as refused:
        return await agent_consent(request, form["interaction"], params, client, session.user_id, workspace_id, error=refused.message, status=400)
    return await proceed(request, params, client, session=session, consented=True, agent_grant=grant.id)


def shown_host(uri: str) -> str:
    """The host (and port) a browser goes to, as the user should read it: look-alike letters in
    their ASCII (punycode) form."""
    parts = urlsplit(uri)
    host = parts.hostname or ""
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        host = host.encode("ascii", "backslashreplace").decode("ascii")
    try:
        port = parts.port
    except ValueError:
        port = None
    return (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")


@goes_on_after_post
@expired_link
@expired_form
@oauth_errors
@accepts(ConsentForm, media=FORM)
async def consent_submit(request: web.Request) -> web.Response:
    """Record the decision: allow remembers it and continues, deny answers access_denied."""
    form = await read_form(request)
    params, client = await _interaction(request, form.get("interaction"))
    session = await current_session(request)
    if params is None or session is None:
        return message(request, "Consent link expired", "Go back to the application and start again.", 400)
    if not check_csrf(request, form.get("csrf")):
        return message(request, "Form expired", "Reload the page and try again.", 403)
    if params.get("resource"):
        return await agent_decision(request, form, params, client, session)
    if form.get("decision") != "allow":
        return error_to_client(request, params, "access_denied", "the user denied the request")
    scopes = scope_list(params.get("scope") or "openid")
    await remember_consent(request.app[SERVICES], session.user_id, client.client_id, scopes)
    return await proceed(request, params, client, session=session, consented=True)


@form_model
class SwitchAccountForm:
    """The consent page's "use another account" form: sign out, then sign in again to the same
    authorization request."""

    interaction: str
    """The sealed authorization request, from the consent page's URL."""
    csrf: str
    """The page's CSRF token (paired with its cookie)."""


@goes_on_after_post
@expired_link
@expired_form
@oauth_errors
@accepts(SwitchAccountForm, media=FORM)
async def switch_account(request: web.Request) -> web.Response:
    """Sign out the browser's session (as the sign-out page does: what was issued in it is
    revoked) and go to the login page of the same authorization request, which continues to the
    consent page, then back to the client, as the account that signs in."""
    form = await read_form(request)
    params, _client = await _interaction(request, form.get("interaction"))
    if params is None:
        return message(request, "Consent link expired", "Go back to the application and start again.", 400)
    if not check_csrf(request, form.get("csrf")):
        return message(request, "Form expired", "Reload the page and try again.", 403)
    session = await current_session(request)
    if session is not None:
        await sign_out(request.app[SERVICES], {session.id})
    params = {key: value for key, value in params.items() if key != "login_hint"}  # the hint named the account being left
    response = redirect(interaction_url(request, "login", params), post=True)
    clear_cookie(request, response)
    return response


# -- logout ---------------------------------------------------------------------------------------


def _origin(uri: str) -> tuple[str, str, int | None]:
    parts = urlsplit(uri)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def _return_allowed(client, uri: str) -> bool:
    """A post-logout return URL on the origin of one of the client's registered redirect URIs."""
    return client is not None and _origin(uri) in {_origin(registered) for registered in client.redirect_uris}


def _with_state(uri: str, state: str | None) -> str:
    return uri + (("&" if "?" in uri else "?") + urlencode({"state": state}) if state else "")


def _confirm_sign_out(request: web.Request, session: LoginSession, client, target: str | None) -> web.Response:
    """The "Sign out?" page; its form posts a ticket bound to this browser's session."""
    ticket = seal(request.app[SERVICES], "signout-confirm", {"to": target, "s": session.id}, 600)
    scheme, host, port = _origin(target) if target else ("", "", None)
    return render(
        request, "logout.html", {"client": client, "target": target, "ticket": ticket, "target_origin": f"{scheme}://{host}" + (f":{port}" if port else "")}
    )


@returns(HTML, description="Signed out already, or the page asking to confirm the sign-out")
@returns(REDIRECT, status=302, description="Signed out: to the signout page, which clears the cookie")
@returns(REDIRECT, status=303, description="As 302, after a POST")
@returns(HTML, status=400, description="The id_token_hint or the return URL is not accepted")
@oauth_errors
@query_model(EndSessionRequest, method="GET")
@accepts(EndSessionRequest, required=False, media=FORM, method="POST")
async def end_session_endpoint(request: web.Request) -> web.Response:
    """RP-initiated logout. With a valid ``id_token_hint``: end the session named by it (and the
    browser's, when it is the same user's), revoke what was issued in them and the user's refresh
    tokens of the client, then return to a registered URL. Without one, or with the hint of another
    user than the browser's, nothing is confirmed, so the user is asked first (RP-Initiated Logout
    1.0, section 2) and only then signed out."""
    services = request.app[SERVICES]
    params = request.query if request.method == "GET" else await read_form(request)
    hint, client_id = params.get("id_token_hint"), params.get("client_id")
    post_logout = params.get("post_logout_redirect_uri")
    session = await current_session(request)
    if not hint:
        client = await load_client(services, client_id)
        if session is None:
            return message(request, "Signed out", "You are signed out.", 200)
        target = _with_state(post_logout, params.get("state")) if post_logout and _return_allowed(client, post_logout) else None
        return _confirm_sign_out(request, session, client, target)
    try:
        claims = await services.signing_keys.verify(hint)  # an expired hint still names the user
    except InvalidToken:
        return message(request, "Sign-out failed", "The id_token_hint is not valid.", 400)
    if claims.get("iss") != services.settings.resolved_issuer or claims.get("token_type", "id_token") != "id_token":
        return message(request, "Sign-out failed", "The id_token_hint was not issued here.", 400)
    if client_id and client_id != claims.get("aud"):
        return message(request, "Sign-out failed", "client_id does not match the id_token_hint.", 400)
    client = await load_client(services, claims.get("aud"))
    if post_logout and not _return_allowed(client, post_logout):
        return message(request, "Sign-out failed", "post_logout_redirect_uri is not allowed for this client.", 400)
    user_id = claims.get("sub")
    target = _with_state(post_logout, params.get("state")) if post_logout else None
    if session is not None and session.user_id != user_id:  # someone else's hint: this browser's user decides
        return _confirm_sign_out(request, session, client, target)
    ending = await sessions_of_grant(services, claims.get("sid"))
    if session is not None:
        ending.add(session.id)
    await sign_out(services, ending)
    if user_id and client is not None:
        await revoke_refresh_tokens(services, user_id, client.client_id)
    return redirect(f"{PREFIX}/signout?" + urlencode({"t": seal(services, "signout", {"to": target}, 300)}), post=request.method == "POST")


@returns(HTML, description="Signed out (no return URL)")
@returns(REDIRECT, status=302, description="Signed out: back to the client's post-logout URL")
@oauth_errors
@query(t={"type": "string", "description": "The sealed return URL of a sign-out (five minutes)"})
async def signout(request: web.Request) -> web.Response:
    """Clear the session cookie, then return to the application (or say so)."""
    data = unseal(request.app[SERVICES], "signout", request.query.get("t"))
    target = data.get("to") if data else None
    response = redirect(target, post=False) if target else message(request, "Signed out", "You are signed out.", 200)
    clear_cookie(request, response)
    return response


@returns(HTML, description="Signed out (no return URL)")
@returns(REDIRECT, status=303, description="Signed out: back to the client's post-logout URL")
@expired_form
@oauth_errors
@accepts(SignOutConfirmation, media=FORM)
async def signout_confirmed(request: web.Request) -> web.Response:
    """The user clicked "Sign out" on the confirmation page: end the session, then return."""
    form = await read_form(request)
    data = unseal(request.app[SERVICES], "signout-confirm", form.get("t"))
    session = await current_session(request)
    if data is None or not check_csrf(request, form.get("csrf")):
        return message(request, "Form expired", "Reload the page and try again.", 403)
    if session is not None and session.id == data.get("s"):
        await sign_out(request.app[SERVICES], {session.id})
    target = data.get("to")
    response = redirect(target, post=True) if target else message(request, "Signed out", "You are signed out.", 200)
    clear_cookie(request, response)
    return response


def setup_templates(app: web.Application) -> None:
    from pathlib import Path

    aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"), app_key=JINJA, autoescape=True)


add_route(routes, ("GET",), f"{PREFIX}/login", login_page)
add_route(routes, ("POST",), f"{PREFIX}/login", login_submit)
add_route(routes, ("GET",), f"{PREFIX}/consent", consent_page)
add_route(routes, ("POST",), f"{PREFIX}/consent", consent_submit)
add_route(routes, ("POST",), f"{PREFIX}/switch-account", switch_account)
add_route(routes, ("GET", "POST"), f"{PREFIX}/end-session", end_session_endpoint)
add_route(routes, ("GET",), f"{PREFIX}/signout", signout)
add_route(routes, ("POST",), f"{PREFIX}/signout", signout_confirmed)
