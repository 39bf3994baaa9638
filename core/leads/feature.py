"""The leads feature's routes (its import job, ``resume-imports`` cron job and data eraser are
installed by ``core.leads.service``)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.leads import routes


def setup(app: web.Application) -> None:
    app.router.add_routes(routes.routes)
