"""Binding an OAuth connect to the browser that started it (issue 11, point 10).

The callback completes a login only in a browser holding the login's binding cookie
(``pb_oauth_<state id>``, an HMAC of the state id; HttpOnly, SameSite=Lax, path ``/auth/``, as long
as the state lives). A browser gets it in one of two ways:

- A login made with the caller's credentials in a header and answered with a redirect: the cookie is
  set on that redirect, so whoever follows it holds it.
- Otherwise (``response=json``, or a login authorized by ``token=`` in the URL, i.e. a link anyone
  could have forwarded): the answer is our ``/auth/{provider}/begin`` URL. Opening it shows which
  workspace the provider account will be connected to; the user's "Continue" (a same-origin POST)
  sets the cookie and goes on to the provider. A forwarded link therefore never connects silently,
  and the provider's authorization URL alone is useless without the cookie.
"""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

from aiohttp import web
from sqlalchemy import select

from patchbay.core.appkeys import DB, SECRETS, SETTINGS
from patchbay.core.connections import service
from patchbay.core.connections.form_models import BeginConfirmation
from patchbay.core.connections.models import OAuthState
from patchbay.core.http.bodies import read_form
from patchbay.core.http.openapi import FORM, accepts, query
from patchbay.core.http.pages import html_page
from patchbay.core.http.responses import HTML, REDIRECT, returns
from patchbay.core.timeutil import utcnow
from patchbay.core.workspaces.models import Workspace

routes = web.RouteTableDef()

COOKIE_PREFIX = "pb_oauth_"


def _binding_message(state_id: str) -> bytes:
    return f"oauth-binding|{state_id}".encode()


def set_binding_cookie(app: web.Application, response: web.StreamResponse, row: OAuthState) -> None:
    lifetime = max(1, int((row.expires_at - utcnow()).total_seconds()))
    secure = urlsplit(app[SETTINGS].public_base_url).scheme == "https"
    response.set_cookie(COOKIE_PREFIX + row.id, app[SECRETS].sign(_binding_message(row.id)), max_age=lifetime, path="/auth/", httponly=True, secure=secure, samesite="Lax")


def is_bound_here(request: web.Request, state_id: str) -> bool:
    """Whether the browser sending ``request`` holds the binding cookie of the login ``state_id``."""
    presented = request.cookies.get(COOKIE_PREFIX + state_id, "")
    return bool(presented) and request.app[SECRETS].verify_signature(_binding_message(state_id), presented)


def clear_binding_cookie(response: web.StreamResponse, state_id: str) -> None:
    response.del_cookie(COOKIE_PREFIX + state_id, path="/auth/")


def begin_url(app: web.Application, provider: str, state: str) -> str:
    return f"{app[SETTINGS].public_base_url}/auth/{provider}/begin?" + urlencode({"state": state})


async def _pending_login(request: web.Request, state: str) -> OAuthState | None:
    from patchbay.core.connections.oauth_routes import state_is_authentic  # the state format lives there

    provider = service.provider_or_404(request.app, request.match_info["providerType"])
    state_id = state.partition(".")[0]
    async with request.app[DB].session() as session:
        row = await session.scalar(select(OAuthState).where(OAuthState.id == state_id))
    if row is None or row.provider != provider.name or row.expires_at < utcnow() or not state_is_authentic(request.app, row, state):
        return None
    return row


def _invalid() -> web.Response:
    return html_page("Connection failed", "This sign-in link is invalid, expired or was already used. Start the connection again.", status=400)


@routes.get("/auth/{providerType}/begin")
@returns(HTML, description="The confirmation page")
@returns(HTML, status=400, description="The sign-in link is invalid, expired or was already used")
@query(state={"type": "string"})
async def begin(request: web.Request) -> web.StreamResponse:
    """Ask the user to confirm an OAuth connect started elsewhere (``response=json`` or a link):
    names the provider and the workspace the account will be connected to."""
    state = request.query.get("state", "")
    row = await _pending_login(request, state)
    if row is None:
        return _invalid()
    provider = service.provider_or_404(request.app, row.provider)
    async with request.app[DB].session() as session:
        workspace_name = await session.scalar(select(Workspace.name).where(Workspace.id == row.workspace_id)) or row.workspace_id
    return html_page(
        f"Connect {provider.display_name}",
        f"Your {provider.display_name} account will be connected to the workspace “{workspace_name}”. "
        "Continue only if you started this connection.",
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
    origin = request.headers.get("Origin")
    expected = "{0.scheme}://{0.netloc}".format(urlsplit(request.app[SETTINGS].public_base_url))
    if origin != expected:
        return html_page("Connection failed", "Confirm the connection from its own page.", status=403)
    form = await read_form(request)
    state = form.get("state")
    row = await _pending_login(request, state if isinstance(state, str) else "")
    if row is None or not (row.meta or {}).get("authorizationUrl"):
        return _invalid()
    response = web.HTTPFound(row.meta["authorizationUrl"])
    set_binding_cookie(request.app, response, row)
    raise response
