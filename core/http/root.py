"""``GET /`` (what this service is) and ``GET /health`` (is the database reachable)."""

from __future__ import annotations

from aiohttp import web
from sqlalchemy import text

from patchbay.core.appkeys import DB, REGISTRY, SETTINGS

routes = web.RouteTableDef()


@routes.get("/")
async def root(request: web.Request) -> web.Response:
    """Service information and where its interfaces live."""
    settings = request.app[SETTINGS]
    return web.json_response(
        {
            "name": "patchbay",
            "connectApi": f"{settings.public_base_url}/connect/v1",
            "issuer": settings.resolved_issuer,
            "discovery": f"{settings.resolved_issuer}/.well-known/openid-configuration",
            "openapi": f"{settings.public_base_url}/openapi.json",
            "providers": len(request.app[REGISTRY].providers),
        }
    )


@routes.get("/health")
async def health(request: web.Request) -> web.Response:
    """200 ``{"status": "ok"}`` when the database answers, else 503."""
    try:
        async with request.app[DB].session() as session:
            await session.execute(text("SELECT 1"))
    except Exception as error:  # any database failure makes the service unhealthy
        return web.json_response({"status": "error", "database": type(error).__name__}, status=503)
    return web.json_response({"status": "ok", "database": request.app[DB].dialect})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
