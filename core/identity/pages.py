"""The login, consent and signout pages (aiohttp-jinja2, branded, no JavaScript needed, CSRF
protected, 303 after every POST, never framed) and RP-initiated logout (``end-session``)."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import web
from sqlalchemy import select, update

from patchbay.core.appkeys import DB, SETTINGS, SIGNING_KEYS
from patchbay.core.identity.authorize import continue_signed_in, error_to_client, proceed, read_interaction, redirect
from patchbay.core.identity.claims import SCOPE_DESCRIPTIONS, scope_list
from patchbay.core.identity.http import PREFIX, add_route, load_client
from patchbay.core.identity.models import Consent, RefreshToken
from patchbay.core.identity.session import check_csrf, csrf_token, current_session, end_session, seal, unseal
from patchbay.core.security.signing_keys import InvalidToken
from patchbay.core.timeutil import utcnow
from patchbay.core.users.service import find_user_by_email, verify_password

routes = web.RouteTableDef()
JINJA = web.AppKey("oidc_jinja", jinja2.Environment)
PAGE_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'; default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; form-action 'self' http: https:",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def render(request: web.Request, template: str, context: dict[str, Any], *, status: int = 200, form: bool = True) -> web.Response:
    response = web.Response(status=status, content_type="text/html", headers=PAGE_HEADERS)
    if form:
        context["csrf"] = csrf_token(request, response)
    context["brand"] = request.app[SETTINGS].branding
    response.text = aiohttp_jinja2.render_string(template, request, context, app_key=JINJA)
    return response


def message(request: web.Request, title: str, text: str, status: int) -> web.Response:
    return render(request, "message.html", {"title": title, "text": text}, status=status, form=False)


async def _interaction(request: web.Request, value: str | None):
    params = read_interaction(request, value)
    if params is None:
        return None, None
    client = await load_client(request, params.get("client_id"))
    if client is None or not client.check_redirect_uri(params.get("redirect_uri", "")):
        return None, None
    return params, client


# -- login ----------------------------------------------------------------------------------------


async def login_page(request: web.Request) -> web.Response:
    """The branded login page of an authorization request."""
    params, client = await _interaction(request, request.query.get("interaction"))
    if params is None:
        return message(request, "Sign-in link expired", "Go back to the application and start again.", 400)
    return render(request, "login.html", {"interaction": request.query["interaction"], "client": client,
                                          "email": params.get("login_hint") or "", "error": None})  # fmt: skip


async def login_submit(request: web.Request) -> web.Response:
    """Check the email and password, start the session and continue the authorization."""
    form = await request.post()
    params, client = await _interaction(request, form.get("interaction"))
    if params is None:
        return message(request, "Sign-in link expired", "Go back to the application and start again.", 400)
    if not check_csrf(request, form.get("csrf")):
        return message(request, "Form expired", "Reload the page and try again.", 403)
    email = (form.get("email") or "").strip()
    async with request.app[DB].session() as session:
        user = await find_user_by_email(session, email) if email else None
    ok = user is not None and await asyncio.to_thread(verify_password, user.password_hash, form.get("password") or "")
    if not ok:
        return render(request, "login.html", {"interaction": form["interaction"], "client": client, "email": email,
                                              "error": "The email or password is not correct."}, status=401)  # fmt: skip
    return await continue_signed_in(request, params, client, user.id)


# -- consent --------------------------------------------------------------------------------------


async def consent_page(request: web.Request) -> web.Response:
    """What the application asks for, to allow or deny."""
    params, client = await _interaction(request, request.query.get("interaction"))
    if params is None or current_session(request) is None:
        return message(request, "Consent link expired", "Go back to the application and start again.", 400)
    scopes = [(scope, SCOPE_DESCRIPTIONS.get(scope, scope)) for scope in scope_list(params.get("scope") or "openid")]
    return render(request, "consent.html", {"interaction": request.query["interaction"], "client": client, "scopes": scopes})


async def consent_submit(request: web.Request) -> web.Response:
    """Record the decision: allow remembers it and continues, deny answers access_denied."""
    form = await request.post()
    params, client = await _interaction(request, form.get("interaction"))
    session = current_session(request)
    if params is None or session is None:
        return message(request, "Consent link expired", "Go back to the application and start again.", 400)
    if not check_csrf(request, form.get("csrf")):
        return message(request, "Form expired", "Reload the page and try again.", 403)
    if form.get("decision") != "allow":
        return error_to_client(request, params, "access_denied", "the user denied the request")
    scopes = scope_list(params.get("scope") or "openid")
    async with request.app[DB].transaction() as db_session:
        row = await db_session.scalar(select(Consent).where(Consent.user_id == session.user_id, Consent.client_id == client.client_id))
        if row is None:
            db_session.add(Consent(user_id=session.user_id, client_id=client.client_id, scopes=sorted(set(scopes))))
        else:
            row.scopes = sorted(set(row.scopes) | set(scopes))
    return await proceed(request, params, client, session=session, consented=True)


# -- logout ---------------------------------------------------------------------------------------


def _origin(uri: str) -> tuple[str, str, int | None]:
    parts = urlsplit(uri)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


async def end_session_endpoint(request: web.Request) -> web.Response:
    """RP-initiated logout: check the hint and the return URL, revoke the refresh tokens of the user
    and client, then sign the browser out."""
    params = request.query if request.method == "GET" else await request.post()
    hint, client_id = params.get("id_token_hint"), params.get("client_id")
    post_logout = params.get("post_logout_redirect_uri")
    user_id = None
    if hint:
        try:
            claims = await request.app[SIGNING_KEYS].verify(hint)  # an expired hint still names the user
        except InvalidToken:
            return message(request, "Sign-out failed", "The id_token_hint is not valid.", 400)
        if claims.get("iss") != request.app[SETTINGS].resolved_issuer or claims.get("token_type", "id_token") != "id_token":
            return message(request, "Sign-out failed", "The id_token_hint was not issued here.", 400)
        if client_id and client_id != claims.get("aud"):
            return message(request, "Sign-out failed", "client_id does not match the id_token_hint.", 400)
        client_id, user_id = claims.get("aud"), claims.get("sub")
    else:
        session = current_session(request)
        user_id = session.user_id if session else None
    client = await load_client(request, client_id) if client_id else None
    if post_logout:
        if client is None or _origin(post_logout) not in {_origin(uri) for uri in client.redirect_uris}:
            return message(request, "Sign-out failed", "post_logout_redirect_uri is not allowed for this client.", 400)
    if user_id and client is not None:
        async with request.app[DB].transaction() as session:
            await session.execute(
                update(RefreshToken).where(RefreshToken.user_id == user_id, RefreshToken.client_id == client.client_id, RefreshToken.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )  # fmt: skip
    target = None
    if post_logout:
        state = params.get("state")
        target = post_logout + (("&" if "?" in post_logout else "?") + urlencode({"state": state}) if state else "")
    return redirect(f"{PREFIX}/signout?" + urlencode({"t": seal(request.app, "signout", {"to": target}, 300)}), post=request.method == "POST")


async def signout(request: web.Request) -> web.Response:
    """Clear the session cookie, then return to the application (or say so)."""
    data = unseal(request.app, "signout", request.query.get("t"))
    target = data.get("to") if data else None
    response = redirect(target, post=False) if target else message(request, "Signed out", "You are signed out.", 200)
    end_session(request, response)
    return response


def setup_templates(app: web.Application) -> None:
    from pathlib import Path

    aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"), app_key=JINJA, autoescape=True)


add_route(routes, ("GET",), f"{PREFIX}/login", login_page)
add_route(routes, ("POST",), f"{PREFIX}/login", login_submit)
add_route(routes, ("GET",), f"{PREFIX}/consent", consent_page)
add_route(routes, ("POST",), f"{PREFIX}/consent", consent_submit)
add_route(routes, ("GET", "POST"), f"{PREFIX}/end-session", end_session_endpoint)
add_route(routes, ("GET",), f"{PREFIX}/signout", signout)
