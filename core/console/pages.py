"""The console's page API: what every ``routes_<area>.py`` builds its pages with (docs/console.md,
"Adding a page").

- :func:`page` decorates a GET handler of a workspace page (``/console/w/{workspace_id}/...``);
  the handler is called as ``handler(request, view)`` with a :class:`View` (the signed-in
  :class:`~patchbay.core.console.service.Person`, the workspace as a
  :class:`~patchbay.core.console.service.Place` with their role, the workspace switcher's list).
  No session: 303 to the sign-in. A workspace the person may not open: 404, as for a workspace that
  does not exist. A role below ``role``: 403.
- :func:`action` decorates a POST handler the same way, and refuses (403) a form without the
  session's CSRF token before anything else runs; ``form=`` names its :func:`form_model`, read and
  validated with pydantic and handed over as the third argument. Writes call the same domain
  services as the API, acting as :meth:`View.principal`.
- :func:`render` answers a template of ``core/console/templates/console/`` (it extends
  ``console/base.html``; ``csrf_field()`` puts the token in a form), :func:`see_other` a 303.
- A domain error raised by a handler (``NotFound``, ``Forbidden``, ``Invalid``, ...) becomes the
  console's error page with its status (``setup_errors``).

Every answer under ``/console`` carries :data:`PAGE_HEADERS` (CSP ``frame-ancestors 'none'``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp_jinja2
import attrs
import jinja2
from aiohttp import web
from markupsafe import Markup

from patchbay.core.appkeys import CONSOLE_JINJA, CONSOLE_NAV, CONSOLE_PERSON, SERVICES
from patchbay.core.console import service
from patchbay.core.console.service import PREFIX, Person, Place
from patchbay.core.http.bodies import read_form, structure
from patchbay.core.http.errors import register_error_format
from patchbay.core.http.openapi import FORM, accepts
from patchbay.core.http.responses import HTML, REDIRECT, returns
from patchbay.core.security.service import Principal

COOKIE = "pb_console"
TEMPLATES = Path(__file__).with_name("templates")
STATIC = Path(__file__).with_name("static")

PageHandler = Callable[..., Awaitable[web.StreamResponse]]


def page_headers(request: web.Request) -> dict[str, str]:
    """The headers of every console answer: never framed, scripts and styles of our own only."""
    issuer = urlsplit(request.app[SERVICES].settings.resolved_issuer)
    # the sign-out form's answer redirects to the identity provider's end-session endpoint
    form_action = "'self'" + (f" {issuer.scheme}://{issuer.netloc}" if issuer.netloc else "")
    return {
        "Content-Security-Policy": (
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; connect-src 'self'; "
            f"form-action {form_action}; base-uri 'none'; frame-ancestors 'none'"
        ),
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "Cache-Control": "no-store",
    }


# -- the navigation -------------------------------------------------------------------------------


@attrs.frozen
class NavItem:
    """An entry of the nav: ``path`` under the workspace (``"connections"``), shown to a role of at
    least ``role`` (and only to operators when ``operator``), in ``order``."""

    label: str
    path: str
    order: int
    role: str = "viewer"
    operator: bool = False


#: the order of the nav's entries (an area's ``NAV`` uses its number)
NAV_ORDER = {"Home": 0, "Connections": 10, "Logs": 20, "Flows": 30, "Integrations": 40, "Webhooks": 50, "Tables": 60, "Settings": 90}


# -- who is asking, and where ---------------------------------------------------------------------


@attrs.frozen
class View:
    """What a console handler knows about the request: who, in which workspace, with which role."""

    request: web.Request
    person: Person
    place: Place
    places: list[Place]

    @property
    def services(self):
        return self.request.app[SERVICES]

    @property
    def workspace_id(self) -> str:
        return self.place.id

    @property
    def role(self) -> str:
        return self.place.role

    def can(self, role: str) -> bool:
        """Whether the person's role here is ``role`` or stronger (``viewer`` < ``manager`` < ``admin``)."""
        return service.role_at_least(self.place.role, role)

    @property
    def principal(self) -> Principal:
        """The principal to hand the domain services: the person, with their role's permissions here."""
        return service.principal_for(self.person, self.place)

    def url(self, path: str = "") -> str:
        """A URL of this workspace's console: ``view.url("settings/keys")``."""
        return f"{PREFIX}/w/{self.place.id}/{path.lstrip('/')}"


async def current_person(request: web.Request) -> Person | None:
    """The person of the request's console cookie (looked up once per request)."""
    if CONSOLE_PERSON not in request:
        token = request.cookies.get(COOKIE)
        request[CONSOLE_PERSON] = await service.person_of_token(request.app[SERVICES], token) if token else None
    return request[CONSOLE_PERSON]


def sign_in_redirect(request: web.Request) -> web.HTTPSeeOther:
    target = request.path_qs if request.method == "GET" else PREFIX + "/"
    return web.HTTPSeeOther(f"{PREFIX}/auth/login?next={quote(target, safe='')}", headers=page_headers(request))


async def signed_in(request: web.Request) -> Person:
    """The signed-in person; else the 303 to the sign-in page is raised."""
    person = await current_person(request)
    if person is None:
        raise sign_in_redirect(request)
    return person


async def view_of(request: web.Request, person: Person, role: str = "viewer") -> View:
    """The :class:`View` of a workspace URL for ``person`` (what :func:`page` hands its handler):
    404 for a workspace they may not open, 403 below ``role``."""
    services = request.app[SERVICES]
    place = await service.place_of(services, person, request.match_info["workspace_id"])
    if place is None:
        raise web.HTTPNotFound(reason="No such workspace")
    if not service.role_at_least(place.role, role):
        raise web.HTTPForbidden(reason=f"This needs the {role} role in {place.name}; yours is {place.role}.")
    return View(request, person, place, await service.places_of(services, person))


def page(*, role: str = "viewer", description: str = "The page") -> Callable[[PageHandler], PageHandler]:
    """A GET page of a workspace, for ``role`` and stronger: ``handler(request, view)``."""

    def decorate(handler: PageHandler) -> PageHandler:
        @functools.wraps(handler)
        async def wrapper(request: web.Request) -> web.StreamResponse:
            person = await signed_in(request)
            return await handler(request, await view_of(request, person, role))

        for mark in (
            returns(HTML, description=description),
            returns(REDIRECT, status=303, description="Not signed in: to the sign-in"),
            returns(HTML, status=403, description=f"The person's role is weaker than {role}"),
            returns(HTML, status=404, description="No such workspace, or not one of the person's (or no such item in it)"),
        ):
            wrapper = mark(wrapper)
        return wrapper

    return decorate


def action(*, role: str = "manager", form: type | None = None, description: str | None = "Done: back to the page") -> Callable[[PageHandler], PageHandler]:
    """A POST of a workspace page, for ``role`` and stronger: ``handler(request, view, form)``
    (``form`` is the validated :func:`form_model` instance, or the raw form without one). The
    session's CSRF token is checked first: without it, 403 and nothing runs. ``description``: of
    the 303 it answers when done (None for an action that answers a page instead: declare that
    page with ``@returns(HTML, ...)`` above this decorator)."""

    def decorate(handler: PageHandler) -> PageHandler:
        @functools.wraps(handler)
        async def wrapper(request: web.Request) -> web.StreamResponse:
            person = await signed_in(request)
            raw = await read_form(request)
            if not service.csrf_ok(person, raw.get("csrf")):
                raise web.HTTPForbidden(reason="The form expired or did not come from the console: reload the page and try again.")
            view = await view_of(request, person, role)
            values = structure({key: raw[key] for key in raw}, form) if form is not None else raw
            return await handler(request, view, values)

        marks = [
            returns(HTML, status=403, description=f"No valid CSRF token, or the person's role is weaker than {role}"),
            returns(HTML, status=404, description="No such workspace, or not one of the person's (or no such item in it)"),
        ]
        if description is not None:
            marks.append(returns(REDIRECT, status=303, description=description))
        if form is not None:
            marks.append(accepts(form, media=FORM))
        for mark in marks:
            wrapper = mark(wrapper)
        return wrapper

    return decorate


def csrf_checked(person: Person, raw: Any) -> None:
    """Refuse (403) a form of a person-level POST (no workspace) without the session's token."""
    if not service.csrf_ok(person, raw.get("csrf")):
        raise web.HTTPForbidden(reason="The form expired or did not come from the console: reload the page and try again.")


# -- answers --------------------------------------------------------------------------------------


def _nav(request: web.Request, person: Person | None, place: Place | None) -> list[NavItem]:
    if place is None or person is None:
        return []
    return [item for item in request.app.get(CONSOLE_NAV, []) if service.role_at_least(place.role, item.role) and (person.is_operator or not item.operator)]


def render(
    request: web.Request, template: str, context: dict[str, Any] | None = None, *, view: View | None = None, status: int = 200, current: str | None = None
) -> web.Response:
    """Answer ``template`` with ``context``, the layout's values (brand, person, workspace, nav,
    CSRF token) and the console's headers. ``current``: the nav entry's path to mark as current."""
    person = view.person if view is not None else request.get(CONSOLE_PERSON)
    place = view.place if view is not None else None
    values = {
        "brand": request.app[SERVICES].settings.branding,
        "prefix": PREFIX,
        "person": person,
        "place": place,
        "places": view.places if view is not None else [],
        "nav": _nav(request, person, place),
        "current": current,
        "csrf": service.csrf_token(person) if person is not None else "",
        "view": view,
        "areas": {item.path for item in request.app.get(CONSOLE_NAV, [])},
        **(context or {}),
    }
    response = web.Response(status=status, content_type="text/html", headers=page_headers(request))
    response.text = aiohttp_jinja2.render_string(template, request, values, app_key=CONSOLE_JINJA)
    return response


def see_other(request: web.Request, location: str) -> web.HTTPSeeOther:
    """The 303 after a POST (raise it or return it)."""
    return web.HTTPSeeOther(location, headers=page_headers(request))


ERROR_TITLES = {400: "Not accepted", 401: "Sign-in needed", 403: "Not allowed", 404: "Not found", 409: "Conflict", 429: "Too many requests"}


def _error_page(status: int, message: str, request: web.Request) -> web.Response:
    title = ERROR_TITLES.get(status, "Something went wrong")
    text = message if status < 500 else "The console could not answer. Try again later."
    return render(request, "console/error.html", {"title": title, "text": text, "status": status}, status=status)


@jinja2.pass_context
def csrf_field(context: Any) -> Markup:
    """``{{ csrf_field() }}`` in a form: the session's CSRF token as a hidden field."""
    return Markup('<input type="hidden" name="csrf" value="{}">').format(context.get("csrf", ""))


def when(moment: datetime | None) -> str:
    """``{{ row.created_at | when }}``: a moment as ``2026-11-27 13:40 UTC`` (empty for none)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if moment is not None else ""


def setup_templates(app: web.Application) -> None:
    aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(TEMPLATES), app_key=CONSOLE_JINJA, autoescape=True)
    app[CONSOLE_JINJA].globals.update(role_at_least=service.role_at_least, csrf_field=csrf_field)
    app[CONSOLE_JINJA].filters["when"] = when
    register_error_format(app, PREFIX, _error_page)
