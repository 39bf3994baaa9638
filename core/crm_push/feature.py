"""The CRM push feature's routes (its push job and ``retry-failed-syncs`` cron job are installed by
``core.crm_push.service``)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.crm_push import routes


def setup(app: web.Application) -> None:
    app.router.add_routes(routes.routes)
