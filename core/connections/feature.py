"""The connections feature's HTTP side: its routes (connections, OAuth, server-to-server, BYOA,
proxy) and the plan's provider counter. The runtime and the periodic jobs are the services'
(``core.connections.service.install``)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.billing.limits import register_counter
from patchbay.core.connections import routes, routes_api, routes_byoa, routes_oauth
from patchbay.core.connections.store import count_providers
from patchbay.core.proxy import routes as proxy_routes


def setup(app: web.Application) -> None:
    register_counter(app[SERVICES], "providers", count_providers)
    for table in (routes.routes, routes_oauth.routes, routes_api.routes, routes_byoa.routes, proxy_routes.routes):
        app.router.add_routes(table)
