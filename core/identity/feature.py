"""The identity provider as a feature of the app (listed in ``core/features.py``)."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.identity import authorize, discovery, federation, introspection, pages, platform, registration, token_endpoint, userinfo
from patchbay.core.appkeys import CRON, DB
from patchbay.core.identity.http import setup_common
from patchbay.core.jobs.cron import CronJob
from patchbay.core.users.sessions import purge_sessions


async def purge_ended_sessions(app: web.Application) -> dict[str, int]:
    async with app[DB].transaction() as session:
        return {"sessionsPurged": await purge_sessions(session)}


def setup(app: web.Application) -> None:
    setup_common(app)
    pages.setup_templates(app)
    for module in (discovery, token_endpoint, authorize, userinfo, introspection, registration, pages, federation, platform):
        app.router.add_routes(module.routes)
    app[CRON].add(CronJob("identity-sessions", 3600, purge_ended_sessions))
