"""The provider registry over HTTP: ``GET /connect/v1/providers`` and ``/providers/{type}`` (4.3).

The list keeps the spec's shape (an array of providers) and narrows it with ``?search=`` (name or
display name), ``?category=``, ``?capability=`` and ``?authMode=``; ``?page=``/``?limit=`` page it,
with the number of matches in ``X-Total-Count``. The detail adds ``connect``: the credential fields,
their labels, the connection parameters, the API's base URL and the documentation link; and the
provider's ``actions`` and ``triggers`` with their schemas and documentation links."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from patchbay.core.actions.api_models import ActionOption, ProviderTrigger
from patchbay.core.actions.service import provider_actions, provider_triggers
from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.facts import connect_facts, logo_svg
from patchbay.core.http.bodies import page_params
from patchbay.core.http.errors import not_found
from patchbay.core.http.openapi import PAGE_QUERY, query
from patchbay.core.http.responses import SVG, reply, response_model, returns
from patchbay.core.plugins.provider import Provider
from patchbay.core.plugins.registry import Registry
from patchbay.core.security.auth import requires

routes = web.RouteTableDef()


@response_model
class ProviderSummary:
    """A provider of the list (spec 2.1)."""

    name: str
    displayName: str
    category: str
    categories: list[str]
    isAvailable: bool
    requiresOAuth: bool
    authMode: str
    capabilities: list[str]
    connectionParams: list[str]
    scopes: list[str]


@response_model
class CredentialField:
    """A field of the connect body's ``credentials``."""

    name: str
    label: str
    required: bool
    secret: bool
    #: whether the connect form asks for it (a field the provider's credential does not use is not)
    asked: bool
    #: where the end user finds the value, in the provider's words
    help: str | None


@response_model
class ConnectionParameter:
    """A connection parameter (``params`` of the connect body); ``default`` when it may be left out."""

    name: str
    label: str
    required: bool
    default: str | None
    help: str | None


@response_model
class ConnectFacts:
    """What connecting the provider takes: ``method`` is ``oauth`` (the login flow), ``credentials``
    (the connect route with ``credentials``) or ``none``."""

    method: str
    credentials: list[CredentialField]
    connectionParams: list[ConnectionParameter]
    scopes: list[str]
    apiBaseUrl: str
    docsUrl: str | None
    webhooks: bool
    logoUrl: str


@response_model
class ProviderDetail(ProviderSummary):
    """One provider with its connect facts, its actions and its triggers (empty lists when it has none)."""

    connect: ConnectFacts
    actions: list[ActionOption]
    triggers: list[ProviderTrigger]


def provider_json(provider: Provider) -> dict[str, Any]:
    """A provider as the spec's 2.1 describes it, plus the facts a client needs to connect."""
    return {
        "name": provider.name,
        "displayName": provider.display_name,
        "category": provider.category,
        "categories": list(provider.all_categories),
        "isAvailable": provider.is_available,
        "requiresOAuth": provider.requires_oauth,
        "authMode": provider.auth_mode,
        "capabilities": list(provider.capabilities),
        "connectionParams": list(provider.connection_params),
        "scopes": list(provider.scopes),
    }


def get_provider(registry: Registry, name: str) -> Provider:
    """The provider named ``name``; 404 ``Provider not found: <name>`` (7A) otherwise."""
    provider = registry.provider(name)
    if provider is None:
        raise not_found(f"Provider not found: {name}")
    return provider


def requested_page(request: web.Request, items: list[Any]) -> tuple[list[Any], tuple[int, int] | None]:
    """``items`` narrowed to ``?page=``/``?limit=`` when either is given (``page_params``: page 1,
    20 a page by default) with that ``(page, limit)``, else all of them and ``None``."""
    if "page" not in request.query and "limit" not in request.query:
        return items, None
    page, limit = page_params(request)
    return items[(page - 1) * limit : page * limit], (page, limit)


def array_page(request: web.Request, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
    """Paging of a list whose documented shape is an array (:func:`requested_page`), and the header
    ``X-Total-Count`` telling how many there are in all."""
    return requested_page(request, items)[0], {"X-Total-Count": str(len(items))}


def matching_providers(registry: Registry, query) -> list[Provider]:
    """The registry's providers that pass the list's filters, by name."""
    search = (query.get("search") or "").strip().lower()
    category, capability, auth_mode = query.get("category"), query.get("capability"), query.get("authMode")
    found = []
    for provider in sorted(registry.providers.values(), key=lambda p: p.name):
        if search and search not in provider.name.lower() and search not in provider.display_name.lower():
            continue
        if category and category not in provider.all_categories:
            continue
        if capability and capability not in provider.capabilities:
            continue
        if auth_mode and provider.auth_mode != auth_mode:
            continue
        found.append(provider)
    return found


@routes.get("/connect/v1/providers")
@query(**PAGE_QUERY, search={"type": "string"}, category={"type": "string"}, capability={"type": "string"}, authMode={"type": "string"})
@returns(list[ProviderSummary])
@requires()
async def list_providers(request: web.Request) -> web.Response:
    """Installed providers; ``?search=``, ``?category=``, ``?capability=``, ``?authMode=`` filter,
    ``?page=``/``?limit=`` page (``X-Total-Count`` tells how many match)."""
    providers, headers = array_page(request, matching_providers(request.app[SERVICES].registry, request.query))
    return reply(request, [provider_json(p) for p in providers], headers=headers)


@routes.get("/connect/v1/providers/{providerType}")
@returns(ProviderDetail)
@requires()
async def get_provider_route(request: web.Request) -> web.Response:
    """One provider with what connecting it takes (``connect``) and what it offers: its ``actions``
    (input and output JSON Schemas, docs links) and ``triggers`` (kind, event types, config schema);
    unknown type: 404."""
    services = request.app[SERVICES]
    provider = get_provider(services.registry, request.match_info["providerType"])
    return reply(
        request,
        {
            **provider_json(provider),
            "connect": connect_facts(provider, services.settings.public_base_url),
            "actions": provider_actions(services.registry, provider.name),
            "triggers": provider_triggers(services.registry, provider.name),
        },
    )


@routes.get("/connect/v1/providers/{providerType}/logo.svg")
@returns(SVG)
async def provider_logo(request: web.Request) -> web.Response:
    """The provider's logo (its brand icon where the catalog ships one, else an SVG monogram),
    public so that an ``<img>`` can show it; unknown type: 404."""
    provider = get_provider(request.app[SERVICES].registry, request.match_info["providerType"])
    return web.Response(
        text=logo_svg(provider),
        content_type="image/svg+xml",
        headers={"Cache-Control": "public, max-age=86400", "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"},
    )


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
