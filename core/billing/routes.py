"""Billing routes (spec 4.16): the workspace's plan, usage, and its subscription with the payment
provider. The limits service itself is ``patchbay.core.billing.limits``."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.billing.limits import limits_of

routes = web.RouteTableDef()


def setup(app: web.Application) -> None:
    limits_of(app)  # validates the [plans.<plan>] tables at start
    app.router.add_routes(routes)
