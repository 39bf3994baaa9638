"""A workspace's connections in the console: the list (filters, search, keyset pages), a
connection's page (metadata, scopes, the credential's kind, refresh history, recent calls) and
its actions: check health, delete, reconnect and the connect link (a connect session's URL).

Every write calls the service the connect API's route calls (``core.connections.service``,
``core.connect_ui.service``); reads come from ``core.connections.browse``."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.connect_ui import service as connect_sessions
from patchbay.core.connect_ui.api_models import CreateConnectSessionDto, EndUserDto
from patchbay.core.connections import browse
from patchbay.core.connections import service as connections
from patchbay.core.connections.facts import brand_logo, logo_path
from patchbay.core.connections.models import CONNECTION_STATUSES
from patchbay.core.console.form_models import CsrfOnlyForm
from patchbay.core.console.pages import NAV_ORDER, NavItem, View, action, page, render, see_other
from patchbay.core.console.service import PREFIX
from patchbay.core.errors import Invalid
from patchbay.core.http.openapi import form_model
from patchbay.core.http.responses import HTML, returns
from patchbay.core.timeline import Key

routes = web.RouteTableDef()
NAV = NavItem("Connections", "connections", NAV_ORDER["Connections"])
BASE = PREFIX + "/w/{workspace_id}/connections"
PAGE_SIZE = 50


@form_model
class ConnectLinkForm:
    """A connect session for an end user: its URL opens the hosted connect page."""

    csrf: str
    """The session's CSRF token."""
    endUserId: str  # noqa: N815 (the form's field name)
    """The customer's user the connection is for."""
    email: str | None = None
    """The end user's email (shown on the connect page)."""
    displayName: str | None = None  # noqa: N815
    """The end user's name (shown on the connect page)."""
    provider: str | None = None
    """Only this provider (empty: any installed one)."""


@form_model
class ReconnectForm:
    """A connect session that renews this connection's credentials."""

    csrf: str
    """The session's CSRF token."""
    endUserId: str | None = None  # noqa: N815 (the form's field name)
    """The end user the session is for (empty: the connection's, else the person's email)."""


def provider_view(services, name: str) -> dict[str, str]:
    """What the page shows of a provider: its display name, and its brand icon's address where it
    has one or else its monogram, as the connect UI does."""
    provider = services.registry.provider(name)
    display = provider.display_name if provider is not None else name
    logo = logo_path(provider) if provider is not None and brand_logo(provider) else None
    return {"name": name, "display": display, "monogram": (display[:1] or "?").upper(), "logo": logo, "installed": provider is not None}


def _filters(request: web.Request) -> dict[str, str]:
    names = ("provider", "status", "endUser", "q")
    return {name: request.query[name].strip() for name in names if request.query.get(name, "").strip()}


@routes.get(BASE)
@page()
async def connection_list(request: web.Request, view: View) -> web.Response:
    """The workspace's connections, newest first: ``provider``, ``status``, ``endUser``, ``q``
    (search) filter, ``cursor`` pages."""
    filters = _filters(request)
    if filters.get("status") and filters["status"] not in CONNECTION_STATUSES:
        raise Invalid(f"status must be one of {', '.join(CONNECTION_STATUSES)}")
    cursor = request.query.get("cursor")
    rows, next_key = await browse.connection_list(
        view.services,
        workspace_id=view.workspace_id,
        provider=filters.get("provider"),
        status=filters.get("status"),
        end_user_id=filters.get("endUser"),
        search=filters.get("q"),
        before=Key.decode(cursor) if cursor else None,
        limit=PAGE_SIZE,
    )
    listed = [
        {
            "row": item.connection,
            "last_used_at": item.last_used_at,
            "provider": provider_view(view.services, item.connection.provider),
            "label": browse.account_label(item.connection.meta),
        }
        for item in rows
    ]
    return render(
        request,
        "console/connections.html",
        {"rows": listed, "filters": filters, "statuses": CONNECTION_STATUSES, "next_cursor": next_key.encode() if next_key else None, "paged": bool(cursor)},
        view=view,
        current="connections",
    )


@routes.get(BASE + "/link")
@page(role="manager")
async def connect_link_form(request: web.Request, view: View) -> web.Response:
    """The form that makes a connect link for an end user."""
    return render(request, "console/connections_link.html", {"made": None, "values": {}}, view=view, current="connections")


@routes.post(BASE + "/link")
@returns(HTML, description="Made: the page with the connect link")
@returns(HTML, status=400, description="The form with why no link was made")
@action(role="manager", form=ConnectLinkForm, description="Not used: the page answers with the link")
async def connect_link(request: web.Request, view: View, form: ConnectLinkForm) -> web.Response:
    """Make a connect session (the connect API's service) and show its URL."""
    values = {"endUserId": form.endUserId, "email": form.email, "displayName": form.displayName, "provider": form.provider}
    dto = CreateConnectSessionDto(
        endUser=EndUserDto(id=form.endUserId, email=form.email or None, displayName=form.displayName or None),
        allowedProviders=[form.provider.strip()] if form.provider and form.provider.strip() else None,
    )
    try:
        row, token = await connect_sessions.create_session(view.services, view.workspace_id, dto)
    except Invalid as error:
        return render(
            request, "console/connections_link.html", {"made": None, "values": values, "error": error.message}, view=view, current="connections", status=400
        )
    made = {"url": connect_sessions.hosted_url(view.services, token), "session": connect_sessions.session_json(row)}
    return render(request, "console/connections_link.html", {"made": made, "values": {}}, view=view, current="connections")


@routes.get(BASE + "/{connection_id}")
@page()
async def connection_page(request: web.Request, view: View) -> web.Response:
    """One connection: metadata, scopes, the credential's kind (never a secret), refresh history
    and recent calls, and its actions."""
    detail = await browse.connection_detail(view.services, workspace_id=view.workspace_id, connection_id=request.match_info["connection_id"])
    provider = view.services.registry.provider(detail.connection.provider)
    context = {
        "detail": detail,
        "c": detail.connection,
        "provider": provider_view(view.services, detail.connection.provider),
        "auth_mode": browse.AUTH_MODES.get(provider.auth_mode, provider.auth_mode) if provider is not None else "unknown (provider not installed)",
        "label": browse.account_label(detail.connection.meta),
    }
    return render(request, "console/connection.html", context, view=view, current="connections")


@routes.post(BASE + "/{connection_id}/check-health")
@action(role="manager", form=CsrfOnlyForm, description="Checked: back to the connection")
async def check_health(request: web.Request, view: View, form: CsrfOnlyForm) -> web.StreamResponse:
    """Check the connection now (the service of ``POST /connect/v1/connections/{id}/check-health``)."""
    connection_id = request.match_info["connection_id"]
    await connections.check_health(view.services, workspace_id=view.workspace_id, connection_id=connection_id)
    raise see_other(request, view.url(f"connections/{connection_id}"))


@routes.post(BASE + "/{connection_id}/delete")
@action(role="manager", form=CsrfOnlyForm, description="Deleted: back to the list")
async def delete_connection(request: web.Request, view: View, form: CsrfOnlyForm) -> web.StreamResponse:
    """Revoke the credential where the provider allows and delete the connection (the service of
    ``DELETE /connect/v1/connections/{id}``)."""
    await connections.disconnect(view.services, workspace_id=view.workspace_id, connection_id=request.match_info["connection_id"], delete=True)
    raise see_other(request, view.url("connections"))


@routes.post(BASE + "/{connection_id}/reconnect")
@returns(HTML, description="Made: the page with the reconnect link")
@action(role="manager", form=ReconnectForm, description="Not used: the page answers with the link")
async def reconnect(request: web.Request, view: View, form: ReconnectForm) -> web.Response:
    """A connect session that renews this connection's credentials; the page shows its URL."""
    detail = await browse.connection_detail(view.services, workspace_id=view.workspace_id, connection_id=request.match_info["connection_id"], limit=0)
    end_user = (form.endUserId or "").strip() or detail.connection.end_user_id or view.person.email
    dto = CreateConnectSessionDto(endUser=EndUserDto(id=end_user), reconnectConnectionId=detail.connection.id)
    row, token = await connect_sessions.create_session(view.services, view.workspace_id, dto)
    made = {"url": connect_sessions.hosted_url(view.services, token), "session": connect_sessions.session_json(row), "reconnect": detail.connection}
    return render(request, "console/connections_link.html", {"made": made, "values": {}}, view=view, current="connections")
