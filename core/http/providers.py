"""The provider registry over HTTP: ``GET /connect/v1/providers`` and ``/providers/{type}`` (4.3)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from patchbay.core.appkeys import REGISTRY
from patchbay.core.http.errors import not_found
from patchbay.core.plugins.provider import Provider
from patchbay.core.plugins.registry import Registry
from patchbay.core.security.auth import requires

routes = web.RouteTableDef()


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


@routes.get("/connect/v1/providers")
@requires()
async def list_providers(request: web.Request) -> web.Response:
    """Every installed provider; ``?category=`` filters."""
    category = request.query.get("category")
    providers = sorted(request.app[REGISTRY].providers.values(), key=lambda p: p.name)
    if category:
        providers = [p for p in providers if category in p.all_categories]
    return web.json_response([provider_json(p) for p in providers])


@routes.get("/connect/v1/providers/{type}")
@requires()
async def get_provider_route(request: web.Request) -> web.Response:
    """One provider; unknown type: 404."""
    return web.json_response(provider_json(get_provider(request.app[REGISTRY], request.match_info["type"])))


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
