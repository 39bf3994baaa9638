"""The CRM push feature: routes, the push job and the ``retry-failed-syncs`` cron."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import CRON, JOBS
from patchbay.core.crm_push import routes
from patchbay.core.crm_push.service import PUSH_JOB, push_job, retry_failed_syncs
from patchbay.core.jobs.cron import CronJob


def setup(app: web.Application) -> None:
    app.router.add_routes(routes.routes)
    app[JOBS].register(PUSH_JOB, push_job, max_attempts=1)
    app[CRON].add(CronJob("retry-failed-syncs", 300, retry_failed_syncs))
