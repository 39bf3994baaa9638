"""The provider registry over HTTP: ``GET /connect/v1/providers`` and ``/providers/{type}`` (4.3).

The list keeps the spec's shape (an array of providers) and narrows it with ``?search=`` (name or
display name), ``?category=``, ``?capability=`` and ``?authMode=``; ``?page=``/``?limit=`` page it,
with the number of matches in ``X-Total-Count``. The detail adds ``connect``: the credential fields,
their labels, the connection parameters, the API's base URL and the documentation link."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.facts import connect_facts, logo_svg
from patchbay.core.http.errors import bad_request, not_found
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


@response_model
class ConnectionParameter:
    """A connection parameter (``params`` of the connect body); ``default`` when it may be left out."""

    name: str
    label: str
    required: bool
    default: str | None


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
    """One provider with its connect facts."""

    connect: ConnectFacts


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


MAX_LIMIT = 100


def _positive(query, name: str, *, maximum: int | None = None) -> int | None:
    raw = query.get(name)
    if raw is None:
        return None
    if not raw.isdigit() or int(raw) < 1 or (maximum is not None and int(raw) > maximum):
        raise bad_request(f"Validation failed: {name} must be a whole number from 1" + (f" to {maximum}" if maximum else ""))
    return int(raw)


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
    page = _positive(request.query, "page")
    limit = _positive(request.query, "limit", maximum=MAX_LIMIT)
    providers = matching_providers(request.app[SERVICES].registry, request.query)
    total = len(providers)
    if page is not None or limit is not None:
        size = limit or 20
        start = ((page or 1) - 1) * size
        providers = providers[start : start + size]
    return reply(request, [provider_json(p) for p in providers], headers={"X-Total-Count": str(total)})


@routes.get("/connect/v1/providers/{providerType}")
@returns(ProviderDetail)
@requires()
async def get_provider_route(request: web.Request) -> web.Response:
    """One provider with what connecting it takes (``connect``); unknown type: 404."""
    provider = get_provider(request.app[SERVICES].registry, request.match_info["providerType"])
    return reply(request, {**provider_json(provider), "connect": connect_facts(provider, request.app[SERVICES].settings.public_base_url)})


@routes.get("/connect/v1/providers/{providerType}/logo.svg")
@returns(SVG)
async def provider_logo(request: web.Request) -> web.Response:
    """The provider's logo (an SVG monogram), public so that an ``<img>`` can show it; unknown
    type: 404."""
    provider = get_provider(request.app[SERVICES].registry, request.match_info["providerType"])
    return web.Response(
        text=logo_svg(provider),
        content_type="image/svg+xml",
        headers={"Cache-Control": "public, max-age=86400", "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"},
    )


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
