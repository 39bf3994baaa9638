"""The connections feature: its routes (connections, OAuth, server-to-server, BYOA, proxy), the
per-process runtime, the plan's provider counter and the periodic jobs token-refresh and
connection-health."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import CRON, SERVICES
from patchbay.core.billing.limits import register_counter
from patchbay.core.connections import api_routes, byoa_routes, jobs, oauth_binding, oauth_routes, routes, runtime
from patchbay.core.connections.store import count_providers
from patchbay.core.proxy import routes as proxy_routes


def setup(app: web.Application) -> None:
    runtime.install(app)
    register_counter(app[SERVICES], "providers", count_providers)
    for table in (routes.routes, oauth_routes.routes, oauth_binding.routes, api_routes.routes, byoa_routes.routes, proxy_routes.routes):
        app.router.add_routes(table)
    for job in jobs.cron_jobs():
        app[CRON].add(job)
