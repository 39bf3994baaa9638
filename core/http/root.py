"""``GET /`` (what this service is), ``GET /health`` (is the database reachable), and the probes of
an orchestrator: ``GET /livez`` or ``/health/live`` (the process answers: restart it when this
fails) and ``GET /readyz`` or ``/health/ready`` (send it traffic: started, not stopping, database
reachable)."""

from __future__ import annotations

import attrs
from aiohttp import web
from sqlalchemy import text

from patchbay.core.appkeys import SERVICES
from patchbay.core.http import api_docs
from patchbay.core.http.probe_models import Health, ProbeOk, ProbeUnavailable, ServiceInfo, Unhealthy
from patchbay.core.http.responses import reply, returns

routes = web.RouteTableDef()


@routes.get("/")
@returns(ServiceInfo)
async def root(request: web.Request) -> web.Response:
    """Service information and where its interfaces live."""
    settings = request.app[SERVICES].settings
    return reply(
        request,
        {
            "name": "patchbay",
            "connectApi": f"{settings.public_base_url}/connect/v1",
            "issuer": settings.resolved_issuer,
            "discovery": f"{settings.resolved_issuer}/.well-known/openid-configuration",
            "openapi": f"{settings.public_base_url}/openapi.json",
            "providers": len(request.app[SERVICES].registry.providers),
        },
    )


@attrs.define
class Readiness:
    """Whether this process should receive traffic: from the end of start-up to the start of shutdown."""

    accepting: bool = False


async def _database_error(request: web.Request) -> str | None:
    try:
        async with request.app[SERVICES].db.session() as session:
            await session.execute(text("SELECT 1"))
    except Exception as error:  # any database failure makes the service unhealthy
        return type(error).__name__
    return None


@routes.get("/health")
@returns(Health)
@returns(Unhealthy, status=503, description="The database does not answer")
async def health(request: web.Request) -> web.Response:
    """200 ``{"status": "ok"}`` when the database answers, else 503; plugins left out as broken
    (``[plugins] skip_broken``) are listed under ``pluginErrors`` with status ``degraded``."""
    error = await _database_error(request)
    if error:
        return reply(request, {"status": "error", "database": error}, status=503)
    body = {"status": "ok", "database": request.app[SERVICES].db.dialect}
    load_errors = request.app[SERVICES].registry.load_errors
    if load_errors:
        body |= {"status": "degraded", "pluginErrors": [error.as_json() for error in load_errors]}
    return reply(request, body)


@routes.get("/health/live")
@routes.get("/livez")
@returns(ProbeOk)
async def livez(request: web.Request) -> web.Response:
    """200 while the process's event loop answers; touches nothing else (a database outage is not a
    reason to restart the process)."""
    return reply(request, {"status": "ok"})


@routes.get("/health/ready")
@routes.get("/readyz")
@returns(ProbeOk)
@returns(ProbeUnavailable, status=503, description="Starting, stopping, or the database does not answer")
async def readyz(request: web.Request) -> web.Response:
    """200 when started, not stopping and the database answers; else 503 with the reason."""
    if not request.app[SERVICES].readiness.accepting:
        return reply(request, {"status": "unavailable", "reason": "starting or stopping"}, status=503)
    error = await _database_error(request)
    if error:
        return reply(request, {"status": "unavailable", "reason": f"database: {error}"}, status=503)
    return reply(request, {"status": "ok"})


async def _accept_traffic(app: web.Application):
    app[SERVICES].readiness.accepting = True
    yield
    app[SERVICES].readiness.accepting = False


async def _stop_accepting(app: web.Application) -> None:
    app[SERVICES].readiness.accepting = False


def setup(app: web.Application) -> None:
    app[SERVICES].readiness = app[SERVICES].readiness = Readiness()
    app.cleanup_ctx.append(_accept_traffic)
    app.on_shutdown.append(_stop_accepting)
    app.router.add_routes(routes)
    api_docs.setup(app)  # GET /docs, the API reference
