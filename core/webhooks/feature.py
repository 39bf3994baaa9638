"""The webhooks feature's routes: the event log, outbound subscriptions and the inbound route (its
job kinds, cron job and ingest writer are installed by ``core.webhooks.service``)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.webhooks import routes_events, routes_inbound, routes_subscriptions


def setup(app: web.Application) -> None:
    app.router.add_routes(routes_events.routes)  # literal /webhooks/events... before /webhooks/{type}/...
    app.router.add_routes(routes_subscriptions.routes)
    app.router.add_routes(routes_inbound.routes)
