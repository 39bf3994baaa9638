"""The leads feature: routes, the import job and the ``resume-imports`` cron."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import CRON, JOBS, SERVICES
from patchbay.core.compliance.service import register_eraser
from patchbay.core.jobs.cron import CronJob
from patchbay.core.leads import routes
from patchbay.core.leads.erase import erase_leads
from patchbay.core.leads.imports import IMPORT_JOB, import_job, resume_imports


def setup(app: web.Application) -> None:
    app.router.add_routes(routes.routes)
    app[JOBS].register(IMPORT_JOB, import_job, max_attempts=5, backoff_base=2.0, backoff_cap=120.0)
    app[CRON].add(CronJob("resume-imports", 300, resume_imports))
    register_eraser(app[SERVICES], "leads", erase_leads)
