"""The connect UI feature's HTTP side: the connect session API, the hosted connect page and its
JavaScript helper (docs/connect-ui.md). Its ``connection.removed`` events are the services'
(``core.connect_ui.service.install``)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.connect_ui import pages, routes


def setup(app: web.Application) -> None:
    app.router.add_routes(routes.routes)
    pages.setup(app)
