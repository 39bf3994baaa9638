"""Signing in and out of the console, the entry point, the workspace switcher and the static files.

Sign-in is the authorization code flow with PKCE (S256) against patchbay's own identity provider:
``/console/auth/login`` keeps state, nonce and verifier in an encrypted cookie scoped to
``/console/auth`` and sends the browser to ``/authorize``; ``/console/auth/callback`` checks
``state`` and ``iss``, trades the code at the token endpoint, checks the ID token and starts a
server-side console session. Sign-out (a POST with the CSRF token) ends that session, clears the
cookie and goes through RP-initiated logout (``end-session`` with the ID token as hint), which ends
the identity provider's session too and comes back to ``/console/auth/signed-out``.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.console import service
from patchbay.core.console.form_models import SignOutForm
from patchbay.core.console.pages import COOKIE, STATIC, csrf_checked, current_person, page_headers, render, see_other, signed_in
from patchbay.core.console.service import PREFIX, LoginStart
from patchbay.core.errors import Unauthenticated
from patchbay.core.http.bodies import read_form
from patchbay.core.http.openapi import FORM, accepts, query
from patchbay.core.http.responses import HTML, REDIRECT, Media, returns
from patchbay.core.security.secrets import DecryptionError

routes = web.RouteTableDef()
LOGIN_COOKIE = "pb_console_login"
LOGIN_SECONDS = 600
STATIC_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}
STATIC_FILES = frozenset(path.name for path in STATIC.iterdir() if path.suffix in STATIC_TYPES)
CSS = Media("text/css")


def _secure(request: web.Request) -> bool:
    return request.app[SERVICES].settings.public_base_url.startswith("https://")


def _safe_next(value: str | None) -> str:
    """Only a path of the console itself (no scheme, no host, no ``//``) is a place to go back to."""
    if not value or not value.startswith(PREFIX + "/") or value.startswith("//") or "\\" in value or urlsplit(value).netloc:
        return PREFIX + "/"
    return value


@routes.get(PREFIX)
@returns(REDIRECT, status=301, description="To /console/")
async def console_bare(request: web.Request) -> web.StreamResponse:
    """The console lives at ``/console/``."""
    raise web.HTTPMovedPermanently(PREFIX + "/", headers=page_headers(request))


@routes.get(PREFIX + "/")
@returns(REDIRECT, status=303, description="To the first workspace's home, or to the sign-in")
@returns(HTML, description="Signed in, but a member of no workspace")
async def console_root(request: web.Request) -> web.StreamResponse:
    """The console's entry: the home of the person's first workspace."""
    person = await signed_in(request)
    places = await service.places_of(request.app[SERVICES], person)
    if not places:
        return render(request, "console/no_workspace.html")
    raise see_other(request, f"{PREFIX}/w/{places[0].id}/")


@routes.get(PREFIX + "/switch")
@returns(REDIRECT, status=303, description="To the chosen workspace's home")
@query(workspace={"type": "string", "description": "The workspace to open"})
async def switch_workspace(request: web.Request) -> web.StreamResponse:
    """The workspace switcher's target (a GET form, so that it works without JavaScript)."""
    await signed_in(request)
    workspace = request.query.get("workspace", "")
    raise see_other(request, f"{PREFIX}/w/{workspace}/" if workspace.isascii() and workspace.replace("-", "").isalnum() else PREFIX + "/")


# -- sign-in --------------------------------------------------------------------------------------


@routes.get(PREFIX + "/auth/login")
@returns(REDIRECT, status=302, description="To the identity provider's authorization endpoint")
@query(next={"type": "string", "description": "The console path to return to after signing in"})
async def login(request: web.Request) -> web.StreamResponse:
    """Start signing in: to the identity provider, with state, nonce and a PKCE challenge."""
    services = request.app[SERVICES]
    start = service.new_login(_safe_next(request.query.get("next")))
    response = web.HTTPFound(service.authorize_url(services, start), headers=page_headers(request))
    sealed = services.secrets.encrypt(json.dumps({"state": start.state, "nonce": start.nonce, "verifier": start.verifier, "next": start.next}))
    response.set_cookie(LOGIN_COOKIE, sealed, path=PREFIX + "/auth", httponly=True, samesite="Lax", secure=_secure(request), max_age=LOGIN_SECONDS)
    raise response


def _login_of(request: web.Request) -> LoginStart | None:
    sealed = request.cookies.get(LOGIN_COOKIE)
    if not sealed:
        return None
    try:
        data = json.loads(request.app[SERVICES].secrets.decrypt(sealed))
        return LoginStart(state=data["state"], nonce=data["nonce"], verifier=data["verifier"], next=_safe_next(data.get("next")))
    except (DecryptionError, ValueError, KeyError, TypeError):
        return None


def _token_endpoint(request: web.Request) -> str:
    """This server's token endpoint on the socket the browser's request came in on."""
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    if isinstance(sockname, tuple) and len(sockname) >= 2:
        host = sockname[0]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{sockname[1]}/api/v1/oidc/token"
    return request.app[SERVICES].settings.resolved_issuer + "/api/v1/oidc/token"


def _sign_in_failed(request: web.Request, text: str, status: int = 400) -> web.Response:
    response = render(request, "console/signed_out.html", {"title": "Sign-in did not complete", "text": text}, status=status)
    response.del_cookie(LOGIN_COOKIE, path=PREFIX + "/auth")
    return response


@routes.get(PREFIX + "/auth/callback")
@returns(REDIRECT, status=303, description="Signed in: to the page asked for")
@returns(HTML, status=400, description="The sign-in was refused, expired or did not start here")
@query(
    code={"type": "string"},
    state={"type": "string"},
    iss={"type": "string"},
    error={"type": "string"},
    error_description={"type": "string"},
)
async def callback(request: web.Request) -> web.StreamResponse:
    """Where the identity provider sends the browser back: trade the code, start the session."""
    services = request.app[SERVICES]
    start = _login_of(request)
    if start is None or request.query.get("state") != start.state:
        return _sign_in_failed(request, "This sign-in did not start here or took too long. Sign in again.")
    if request.query.get("iss") not in (None, services.settings.resolved_issuer):
        return _sign_in_failed(request, "The answer came from another identity provider.")
    if "error" in request.query or not request.query.get("code"):
        reason = request.query.get("error_description") or request.query.get("error") or "no code"
        return _sign_in_failed(request, f"The identity provider did not sign you in ({reason}).")
    try:
        user_id, id_token, grant_id = await service.redeem_code(services, start, request.query["code"], token_endpoint=_token_endpoint(request))
        token = await service.start_session(services, user_id, id_token, grant_id)
    except Unauthenticated as error:
        return _sign_in_failed(request, error.message)
    response = see_other(request, start.next)
    response.del_cookie(LOGIN_COOKIE, path=PREFIX + "/auth")
    response.set_cookie(COOKIE, token, path=PREFIX, httponly=True, samesite="Lax", secure=_secure(request), max_age=service.SESSION_SECONDS)
    raise response


# -- sign-out -------------------------------------------------------------------------------------


@routes.post(PREFIX + "/auth/logout")
@returns(REDIRECT, status=303, description="Signed out here: to the identity provider's end-session endpoint")
@returns(HTML, status=403, description="No valid CSRF token")
@accepts(SignOutForm, media=FORM)
async def logout(request: web.Request) -> web.StreamResponse:
    """Sign out: end the console session, then RP-initiated logout at the identity provider."""
    person = await current_person(request)
    if person is None:
        raise see_other(request, PREFIX + "/auth/signed-out")
    csrf_checked(person, await read_form(request))
    await service.end_session(request.app[SERVICES], person.session_id)
    response = see_other(request, service.end_session_url(request.app[SERVICES], person.id_token))
    response.del_cookie(COOKIE, path=PREFIX, secure=_secure(request), httponly=True, samesite="Lax")
    raise response


@routes.get(PREFIX + "/auth/signed-out")
@returns(HTML, description="Signed out, with a link to sign in again")
@query(state={"type": "string"})
async def signed_out(request: web.Request) -> web.Response:
    """The page after signing out."""
    return render(request, "console/signed_out.html", {"title": "Signed out", "text": "You are signed out of the console."})


# -- static files ---------------------------------------------------------------------------------


@routes.get(PREFIX + "/static/{file}")
@returns(Media("text/css"), description="A stylesheet or a script of the console")
async def static_file(request: web.Request) -> web.StreamResponse:
    """The console's own stylesheet and script (no CDN, no build step)."""
    name = request.match_info["file"]
    if name not in STATIC_FILES:
        raise web.HTTPNotFound(reason="No such file")
    path = STATIC / name
    return web.FileResponse(
        path, headers={"Content-Type": STATIC_TYPES[path.suffix], "Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff"}
    )


@routes.get(PREFIX + "/brand.css")
@returns(CSS, description="The [branding] colours as CSS custom properties")
async def brand_css(request: web.Request) -> web.Response:
    """The deployment's ``[branding]`` colours, as CSS variables the stylesheet uses."""
    brand = request.app[SERVICES].settings.branding
    text = f":root {{ --brand: {_css_color(brand.primary_color)}; --brand-bg: {_css_color(brand.background_color)}; }}\n"
    return web.Response(text=text, content_type="text/css", headers={"Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff"})


def _css_color(value: str) -> str:
    """A colour setting as CSS: ``#hex`` or a plain name; anything else falls back to the default."""
    cleaned = value.strip()
    if (cleaned.startswith("#") and len(cleaned) in (4, 7, 9) and all(c in "0123456789abcdefABCDEF" for c in cleaned[1:])) or cleaned.isalpha():
        return cleaned
    return "#3b5bdb"
