"""The console as a feature of the app (listed in ``core/features.py``): its templates, its error
page, and the routes of every area.

Each area of the console is one ``routes_<area>.py`` module with a ``routes`` table and, when it
has an entry in the nav, ``NAV`` (a ``pages.NavItem``). :data:`AREAS` lists them, in one place:
add a line here to add an area."""

from __future__ import annotations

import importlib

from aiohttp import web

from patchbay.core.appkeys import CONSOLE_NAV
from patchbay.core.console import pages

AREAS: tuple[str, ...] = (
    "patchbay.core.console.routes_auth",
    "patchbay.core.console.routes_home",
    "patchbay.core.console.routes_connections",
    "patchbay.core.console.routes_logs",
    "patchbay.core.console.routes_settings",
    "patchbay.core.console.routes_flow_approvals",
    "patchbay.core.console.routes_flows",
    "patchbay.core.console.routes_webhooks",
    "patchbay.core.console.routes_tables",
    "patchbay.core.console.routes_integrations",
    "patchbay.core.console.routes_providers",
)


def setup(app: web.Application) -> None:
    pages.setup_templates(app)
    nav = []
    for name in AREAS:
        module = importlib.import_module(name)
        for route in module.routes:
            # the console's operations are named apart from the API's handlers of the same name
            route.handler.operation_name = f"console_{route.handler.__name__}"
        app.router.add_routes(module.routes)
        if getattr(module, "NAV", None) is not None:
            nav.append(module.NAV)
    app[CONSOLE_NAV] = sorted(nav, key=lambda item: item.order)
