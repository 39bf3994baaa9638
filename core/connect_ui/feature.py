"""The connect UI feature: the connect session API, the hosted connect page and its JavaScript
helper (docs/connect-ui.md)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.connect_ui import pages, routes, service


def setup(app: web.Application) -> None:
    app.router.add_routes(routes.routes)
    pages.setup(app)
    service.announce_removals(app)
