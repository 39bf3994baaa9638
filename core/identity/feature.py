"""The identity provider as a feature of the app (listed in ``core/features.py``): its routes, pages
and error shape. Its runtime parts and periodic jobs are installed by ``core.identity.service``."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.identity import (
    pages,
    routes_agents,
    routes_authorize,
    routes_discovery,
    routes_federation,
    routes_introspection,
    routes_platform,
    routes_registration,
    routes_token,
    routes_userinfo,
)
from patchbay.core.identity.http import setup_common


def setup(app: web.Application) -> None:
    setup_common(app)
    pages.setup_templates(app)
    for module in (
        routes_discovery,
        routes_token,
        routes_authorize,
        routes_userinfo,
        routes_introspection,
        routes_registration,
        pages,
        routes_federation,
        routes_platform,
        routes_agents,
    ):
        app.router.add_routes(module.routes)
