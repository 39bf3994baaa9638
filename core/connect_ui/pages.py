"""The hosted connect page (``/connect/ui``): the end user of a connect session picks a provider and
connects it. Server-rendered (aiohttp-jinja2), usable without JavaScript, branded with
``[branding]``, CSRF protected, never framed.

The session token arrives once in the hosted URL; the first request trades it for an HttpOnly
cookie holding the signed session id and redirects to a URL without it."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp_jinja2
import jinja2
from aiohttp import web
from yarl import URL

from patchbay.core.appkeys import CONNECT_UI_JINJA, SERVICES
from patchbay.core.connect_ui import service
from patchbay.core.connect_ui.fields import form_fields, logo_url
from patchbay.core.connect_ui.form_models import CredentialsForm, OAuthStartForm
from patchbay.core.connect_ui.models import ConnectSession
from patchbay.core.connect_ui.service import SessionUnusable
from patchbay.core.connections.routes_oauth import HeldForApproval, begin_login, login_url
from patchbay.core.errors import DomainError
from patchbay.core.http.bodies import read_form
from patchbay.core.http.errors import ApiError
from patchbay.core.http.openapi import FORM, accepts, query
from patchbay.core.http.responses import HTML, JAVASCRIPT, REDIRECT, returns

routes = web.RouteTableDef()
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
PREFIX = "/connect/ui"
COOKIE = "pb_connect"
STATIC = Path(__file__).with_name("static")
STATIC_FILES = frozenset(path.name for path in STATIC.glob("*.js"))
PAGE_HEADERS = {
    "X-Frame-Options": "DENY",
    # form-action allows the redirect of the OAuth step's form to the provider's authorization page
    "Content-Security-Policy": "frame-ancestors 'none'; default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "form-action 'self' http: https:; connect-src 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
ERRORS = {
    "unknown": ("Link not valid", "This connect link is not valid. Go back to the application and start again."),
    "expired": ("Link expired", "This connect link has expired. Go back to the application and start again."),
    "revoked": ("Link cancelled", "This connect link was cancelled. Go back to the application and start again."),
    "used": ("Link already used", "This connect link was already used. Go back to the application and start again."),
}


def _signed(request: web.Request, purpose: str, session_id: str) -> str:
    return request.app[SERVICES].secrets.sign(f"connect-ui|{purpose}|{session_id}".encode())


def _cookie_session_id(request: web.Request) -> str | None:
    session_id, _, mac = request.cookies.get(COOKIE, "").partition(".")
    if session_id and mac and request.app[SERVICES].secrets.verify_signature(f"connect-ui|cookie|{session_id}".encode(), mac):
        return session_id
    return None


def render(request: web.Request, template: str, context: dict[str, Any], *, status: int = 200) -> web.Response:
    response = web.Response(status=status, content_type="text/html", headers=PAGE_HEADERS)
    context["brand"] = request.app[SERVICES].settings.branding
    context["prefix"] = PREFIX
    response.text = aiohttp_jinja2.render_string(template, request, context, app_key=CONNECT_UI_JINJA)
    return response


def error_message(request: web.Request, title: str, text: str, status: int = 400) -> web.Response:
    return render(request, "message.html", {"title": title, "text": text, "reason": "error"}, status=status)


def error_page(request: web.Request, reason: str, status: int = 400) -> web.Response:
    title, text = ERRORS[reason]
    return render(request, "message.html", {"title": title, "text": text, "reason": reason}, status=status)


async def _current(request: web.Request) -> ConnectSession:
    session_id = _cookie_session_id(request)
    if session_id is None:
        raise SessionUnusable("unknown", ERRORS["unknown"][1])
    return await service.usable_session(request.app[SERVICES], session_id=session_id)


def _csrf_ok(request: web.Request, row: ConnectSession, value: Any) -> bool:
    return isinstance(value, str) and request.app[SERVICES].secrets.verify_signature(f"connect-ui|csrf|{row.id}".encode(), value)


#: what every page answers when its session cannot be used (or a form is refused)
unusable = returns(HTML, status=400, description="The link is not valid, expired, cancelled or used, or the form was refused")
form_expired = returns(HTML, status=403, description="The form expired (CSRF)")
step_page = returns(HTML, description="The page")


def page(handler: Handler) -> Handler:
    """A page whose session cannot be used says why, as a page."""

    @functools.wraps(handler)
    async def wrapper(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except SessionUnusable as error:
            return error_page(request, error.why)

    return wrapper


@routes.get(PREFIX)
@returns(REDIRECT, status=303, description="To the first step, the token traded for the page's cookie")
@unusable
@query(session={"type": "string", "description": "The connect session's token, from its hosted URL"})
@page
async def enter(request: web.Request) -> web.Response:
    """Trade the hosted URL's token for the page's cookie and go to the first step."""
    token = request.query.get("session")
    if not token:
        return error_page(request, "unknown")
    row = await service.usable_session(request.app[SERVICES], token)
    providers = await service.offered_providers(request.app[SERVICES], row)
    target = f"{PREFIX}/providers/{providers[0].name}" if len(providers) == 1 else f"{PREFIX}/providers"
    response = web.HTTPSeeOther(target, headers=PAGE_HEADERS)
    secure = request.app[SERVICES].settings.public_base_url.startswith("https://")
    response.set_cookie(COOKIE, f"{row.id}.{_signed(request, 'cookie', row.id)}", path=PREFIX, httponly=True, samesite="Lax", secure=secure)
    raise response


@routes.get(PREFIX + "/providers")
@step_page
@unusable
@query(q={"type": "string"}, category={"type": "string"})
@page
async def provider_list(request: web.Request) -> web.Response:
    """The providers the session offers; ``?q=`` searches names, ``?category=`` filters."""
    row = await _current(request)
    offered = await service.offered_providers(request.app[SERVICES], row)
    query = request.query.get("q", "").strip()
    category = request.query.get("category", "")
    shown = [p for p in offered if (not query or query.lower() in f"{p.display_name} {p.name}".lower()) and (not category or category in p.all_categories)]
    categories = sorted({c for p in offered for c in p.all_categories})
    return render(
        request, "providers.html", {"providers": shown, "categories": categories, "query": query, "category": category, "end_user": row.end_user or {}}
    )


async def _step(
    request: web.Request,
    row: ConnectSession,
    *,
    provider_name: str | None = None,
    error: str | None = None,
    values: dict[str, str] | None = None,
    status: int = 200,
) -> web.Response:
    provider = await service.offered_provider(request.app[SERVICES], row, provider_name or request.match_info["name"])
    context = {
        "provider": provider,
        "fields": form_fields(provider),
        "error": error,
        "values": values or {},
        "csrf": _signed(request, "csrf", row.id),
        "reconnect": row.reconnect_id is not None,
        "several": len(await service.offered_providers(request.app[SERVICES], row)) > 1,
    }
    return render(request, "oauth.html" if provider.requires_oauth else "api_key.html", context, status=status)


@routes.get(PREFIX + "/providers/{name}")
@step_page
@unusable
@page
async def provider_step(request: web.Request) -> web.Response:
    """The provider's own step: its credential form, or the button that starts OAuth."""
    return await _step(request, await _current(request))


@routes.post(PREFIX + "/providers/{name}")
@returns(REDIRECT, status=303, description="Connected: to the last page")
@unusable
@form_expired
@accepts(CredentialsForm, media=FORM)
@page
async def provider_submit(request: web.Request) -> web.Response:
    """Connect with the submitted credentials and parameters; the form again with the refusal."""
    row = await _current(request)
    provider = await service.offered_provider(request.app[SERVICES], row, request.match_info["name"])
    form = await read_form(request)
    if not _csrf_ok(request, row, form.get("csrf")):
        return render(request, "message.html", {"title": "Form expired", "text": "Reload the page and try again.", "reason": "csrf"}, status=403)
    credentials: dict[str, Any] = {}
    params: dict[str, Any] = {}
    for field in form_fields(provider):
        value = str(form.get(field.name, "")).strip()
        if field.required and not value:
            return await _step(request, row, error=f"{field.label} is required.", values=_echo(form), status=400)
        if value:
            (params if field.group == "params" else credentials)[field.name.removeprefix("param:")] = value
    try:
        await service.connect_api_key(request.app[SERVICES], row, provider, credentials, params)
    except SessionUnusable:
        raise
    except (ApiError, DomainError) as error:
        return await _step(request, row, error=error.message, values=_echo(form), status=400)
    raise web.HTTPSeeOther(f"{PREFIX}/done", headers=PAGE_HEADERS)


@routes.post(PREFIX + "/providers/{name}/oauth")
@returns(REDIRECT, status=302, description="To the provider's authorization page")
@returns(REDIRECT, status=303, description="Held for approval: to the last page")
@login_url
@unusable
@form_expired
@accepts(OAuthStartForm, media=FORM)
@page
async def oauth_start(request: web.Request) -> web.StreamResponse:
    """Start the provider's OAuth login for the end user (in the popup, or the whole page on a
    phone): the connections feature's login, coming back to ``/connect/ui/oauth/return``."""
    row = await _current(request)
    provider = await service.offered_provider(request.app[SERVICES], row, request.match_info["name"])
    form = await read_form(request)
    if not _csrf_ok(request, row, form.get("csrf")):
        return render(request, "message.html", {"title": "Form expired", "text": "Reload the page and try again.", "reason": "csrf"}, status=403)
    query = {field.name.removeprefix("param:"): str(form.get(field.name, "")).strip() for field in form_fields(provider) if field.group == "params"}
    query = {key: value for key, value in query.items() if value}
    query["redirect_uri"] = f"{request.app[SERVICES].settings.public_base_url}{PREFIX}/oauth/return?provider={provider.name}"
    query["metadata"] = json.dumps({**(row.default_metadata or {}), "connectSessionId": row.id})
    if row.reconnect_id:
        query["connection_id"] = row.reconnect_id
    try:
        return await begin_login(request, service.end_user_principal(row), provider.name, query)
    except HeldForApproval as held:
        await service.hold_for_approval(request.app[SERVICES], row, held.approval_id)
        raise web.HTTPSeeOther(f"{PREFIX}/done", headers=PAGE_HEADERS) from None
    except (ApiError, DomainError) as error:
        return await _step(request, row, error=error.message, values=_echo(form), status=400)


@routes.get(PREFIX + "/oauth/return")
@returns(REDIRECT, status=303, description="Connected: to the last page")
@unusable
@query(provider={"type": "string"}, status={"type": "string"}, connectionId={"type": "string"}, error={"type": "string"}, error_description={"type": "string"})
@page
async def oauth_return(request: web.Request) -> web.Response:
    """Where the OAuth callback sends the browser: claim the connection, or show the refusal."""
    row = await _current(request)
    provider = await service.offered_provider(request.app[SERVICES], row, request.query.get("provider", ""))
    if request.query.get("status") != "connected":
        reason = request.query.get("error_description") or request.query.get("error") or "The sign-in did not complete."
        await service.emit(
            request.app[SERVICES],
            row.workspace_id,
            provider.name,
            "connection.failed",
            {"endUserId": row.end_user_id, "reason": reason, "connectSessionId": row.id},
        )
        return await _step(request, row, provider_name=provider.name, error=reason, status=400)
    try:
        await service.finish_oauth(request.app[SERVICES], row, provider, request.query.get("connectionId", ""))
    except (ApiError, DomainError) as error:
        return error_message(request, "Connection not completed", error.message)
    raise web.HTTPSeeOther(f"{PREFIX}/done", headers=PAGE_HEADERS)


def _echo(form) -> dict[str, str]:
    """The submitted parameters to show again (never a credential)."""
    return {key: str(value) for key, value in form.items() if key.startswith("param:")}


@routes.get(PREFIX + "/done")
@step_page
@unusable
async def done(request: web.Request) -> web.Response:
    """The end of the session: connected, reconnected or waiting for approval. Goes back to the
    customer's return URL (or posts to the page that opened this one, at the return URL's origin)."""
    session_id = _cookie_session_id(request)
    row = await service.used_session(request.app[SERVICES], session_id) if session_id is not None else None
    if row is None:
        return error_page(request, "unknown")
    state = "pending_approval" if row.approval_id and not row.connection_id else "reconnected" if row.reconnect_id else "connected"
    provider = None
    if row.allowed_providers and len(row.allowed_providers) == 1:
        provider = row.allowed_providers[0]
    result = {"status": state, "connectionId": row.connection_id, "approvalId": row.approval_id, "endUserId": row.end_user_id}
    return_to = None
    if row.return_url:
        return_to = row.return_url + ("&" if "?" in row.return_url else "?") + urlencode({k: v for k, v in result.items() if v})
    return render(
        request, "done.html", {"state": state, "result": result, "return_to": return_to, "origin": _message_origin(row.return_url), "provider": provider}
    )


def _message_origin(return_url: str | None) -> str:
    """The one origin the done page may post its result to, the return URL's; empty (no message)
    without one, so that a page that opened a leaked session link learns nothing."""
    if not return_url:
        return ""
    try:
        return str(URL(return_url).origin())
    except ValueError:
        return ""


@routes.get(PREFIX + "/static/{file}")
@returns(JAVASCRIPT, description="The script")
async def static_file(request: web.Request) -> web.StreamResponse:
    """The page's script and the customers' helper, ``patchbay-connect.js``."""
    name = request.match_info["file"]
    if name not in STATIC_FILES:
        raise web.HTTPNotFound()
    return web.FileResponse(
        STATIC / name, headers={"Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff"}
    )


def setup(app: web.Application) -> None:
    env = aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")), app_key=CONNECT_UI_JINJA, autoescape=True)
    env.globals["logo_url"] = logo_url
    app.router.add_routes(routes)
