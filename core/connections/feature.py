"""The connections feature: its routes, the per-process runtime, the plan's provider counter and
the periodic jobs token-refresh and connection-health."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.billing.limits import register_counter
from patchbay.core.connections import runtime
from patchbay.core.connections.store import count_providers


def setup(app: web.Application) -> None:
    runtime.install(app)
    register_counter(app, "providers", count_providers)
