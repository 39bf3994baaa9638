"""Integrations in the console: per provider, whether it can connect in this workspace (API key or
basic credentials; an OAuth app of the workspace or the deployment), its webhook URL and whether its
webhook secret is set (never a secret). A workspace's admins set its own OAuth app, scopes and API
base URL; the deployment's operators also set the deployment's, with its webhook secrets. Every
write calls the service the API routes call (``core.integrations.service``)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.console.pages import NAV_ORDER, NavItem, View, action, page, render, see_other
from patchbay.core.console.service import PREFIX
from patchbay.core.errors import Forbidden, Invalid
from patchbay.core.http.openapi import form_model
from patchbay.core.http.responses import HTML, returns
from patchbay.core.integrations import service as integrations

routes = web.RouteTableDef()
NAV = NavItem("Integrations", "integrations", NAV_ORDER["Integrations"], role="admin")
BASE = PREFIX + "/w/{workspace_id}/integrations"

#: how each way of connecting reads on the page
CONNECTS = {
    "api_key": "yes, with an API key",
    "basic": "yes, with a user name and password",
    "oauth2_cc": "yes, with client credentials",
    "none": "yes, no credentials needed",
    "oauth:workspace": "yes, with this workspace's OAuth app",
    "oauth:deployment": "yes, with the deployment's OAuth app",
}

#: where a value in effect comes from, as the page says it
ORIGINS = {
    "workspace": "this workspace",
    "deployment": "the deployment (stored)",
    "file": "the settings file",
    "definition": "the provider's definition",
    None: "nowhere",
}


@form_model
class IntegrationForm:
    """A provider's settings at one level. An empty field keeps what is stored; ``scopes`` is a
    space-separated list."""

    csrf: str
    """The session's CSRF token."""
    clientId: str | None = None  # noqa: N815 (the form's field name)
    """The OAuth app's client id (OAuth providers)."""
    clientSecret: str | None = None  # noqa: N815
    """The OAuth app's client secret: stored encrypted, never shown."""
    scopes: str | None = None
    """Scopes asked for, separated by spaces."""
    apiBaseUrl: str | None = None  # noqa: N815
    """The API base URL proxied calls go to."""
    webhookSecret: str | None = None  # noqa: N815
    """The secret inbound webhooks are verified with (the deployment's only)."""
    webhookVerifyToken: str | None = None  # noqa: N815
    """The token a subscription handshake must echo (the deployment's only)."""


@form_model
class RemoveIntegrationForm:
    """Remove every value stored at the level: the next level's apply."""

    csrf: str
    """The session's CSRF token."""


@routes.get(BASE)
@page(role="admin", description="The integrations (workspace admins and operators)")
async def integrations_page(request: web.Request, view: View) -> web.Response:
    """Every provider (``?q=`` finds them by name): can it connect here, how, its webhook URL and
    webhook secret status, and a link to its settings."""
    search = (request.query.get("q") or "").strip().lower()[:100]
    rows = await integrations.overview(view.services, workspace_id=view.workspace_id)
    if search:
        rows = [row for row in rows if search in row.provider.name.lower() or search in row.provider.display_name.lower()]
    context = {"integrations": rows, "connects": CONNECTS, "q": search}
    return render(request, "console/integrations.html", context, view=view, current="integrations")


async def _provider_page(request: web.Request, view: View, *, error: str | None = None, level: str | None = None, saved: str | None = None, status: int = 200):
    name = request.match_info["providerType"]
    workspace = await integrations.describe(view.services, workspace_id=view.workspace_id, provider_name=name)
    deployment = await integrations.describe(view.services, workspace_id=None, provider_name=name) if view.person.is_operator else None
    context = {
        "settings": workspace,
        "deployment": deployment,
        "provider": view.services.registry.provider(name),
        "origins": ORIGINS,
        "error": error,
        "error_level": level,
        "saved": saved,
    }
    return render(request, "console/integration.html", context, view=view, current="integrations", status=status)


@routes.get(BASE + "/{providerType}")
@page(role="admin", description="A provider's settings (404 for a provider that is not installed)")
async def integration_page(request: web.Request, view: View) -> web.Response:
    """One provider's settings for this workspace and, for operators, for the deployment: what is
    stored (secrets only as set or not, with a fingerprint) and what is in effect."""
    return await _provider_page(request, view)


def _changes(form: IntegrationForm, *, deployment: bool) -> dict:
    """The fields the form fills (an empty field keeps the stored value)."""
    fields = integrations.DEPLOYMENT_FIELDS if deployment else integrations.WORKSPACE_FIELDS
    changes = {}
    for name in fields:
        value = (getattr(form, name) or "").strip()
        if not value:
            continue
        changes[name] = value.replace(",", " ").split() if name == "scopes" else value
    return changes


def _require_operator(view: View) -> None:
    if not view.person.is_operator:
        raise Forbidden("The deployment's integrations are for its operators.")


async def _save(request: web.Request, view: View, form: IntegrationForm, *, deployment: bool) -> web.StreamResponse:
    level = "deployment" if deployment else "workspace"
    changes = _changes(form, deployment=deployment)
    try:
        if not changes:
            raise Invalid("Fill in at least one field to change (empty fields keep what is stored).")
        await integrations.save(
            view.services, workspace_id=None if deployment else view.workspace_id, provider_name=request.match_info["providerType"], body=changes
        )
    except Invalid as error:
        return await _provider_page(request, view, error=error.message, level=level, status=400)
    return await _provider_page(request, view, saved=level)


@routes.post(BASE + "/{providerType}/workspace")
@returns(HTML, description="Saved: the provider's page")
@returns(HTML, status=400, description="The provider's page with why nothing was saved")
@action(role="admin", form=IntegrationForm, description=None)
async def save_workspace(request: web.Request, view: View, form: IntegrationForm) -> web.StreamResponse:
    """Set this workspace's OAuth app, scopes or API base URL for the provider."""
    return await _save(request, view, form, deployment=False)


@routes.post(BASE + "/{providerType}/deployment")
@returns(HTML, description="Saved: the provider's page")
@returns(HTML, status=400, description="The provider's page with why nothing was saved")
@action(role="admin", form=IntegrationForm, description=None)
async def save_deployment(request: web.Request, view: View, form: IntegrationForm) -> web.StreamResponse:
    """Set the deployment's OAuth app, scopes, API base URL or webhook secrets for the provider
    (operators only: 403 for anyone else)."""
    _require_operator(view)
    return await _save(request, view, form, deployment=True)


@routes.post(BASE + "/{providerType}/workspace/remove")
@action(role="admin", form=RemoveIntegrationForm)
async def remove_workspace(request: web.Request, view: View, _form: RemoveIntegrationForm) -> web.StreamResponse:
    """Remove what is stored for the provider in this workspace (404 when nothing is)."""
    name = request.match_info["providerType"]
    await integrations.delete(view.services, workspace_id=view.workspace_id, provider_name=name)
    raise see_other(request, view.url(f"integrations/{name}"))


@routes.post(BASE + "/{providerType}/deployment/remove")
@action(role="admin", form=RemoveIntegrationForm)
async def remove_deployment(request: web.Request, view: View, _form: RemoveIntegrationForm) -> web.StreamResponse:
    """Remove what is stored for the provider for the deployment (operators only; 404 when nothing
    is): the settings file's values apply again."""
    _require_operator(view)
    name = request.match_info["providerType"]
    await integrations.delete(view.services, workspace_id=None, provider_name=name)
    raise see_other(request, view.url(f"integrations/{name}"))
