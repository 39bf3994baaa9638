"""Housekeeping of the framework's own tables: finished jobs, expired rate-limit counters, and the
records past their retention (:mod:`patchbay.core.jobs.retention`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from aiohttp import web
from sqlalchemy import delete

from patchbay.core.appkeys import CRON, DB, RATE_LIMITER
from patchbay.core.jobs.cron import CronJob
from patchbay.core.jobs.models import Job
from patchbay.core.jobs.retention import purge_expired
from patchbay.core.timeutil import utcnow

#: Finished jobs are kept this long for inspection (their dedupe keys guard cron ticks meanwhile).
KEEP_FINISHED = timedelta(days=7)


async def purge(app: web.Application) -> dict[str, Any]:
    async with app[DB].transaction() as session:
        jobs = await session.execute(
            delete(Job).where(Job.status.in_(("done", "failed")), Job.updated_at < utcnow() - KEEP_FINISHED)
        )
    counters = await app[RATE_LIMITER].purge()
    return {"jobsPurged": jobs.rowcount, "counterRowsPurged": counters, **await purge_expired(app)}


def setup(app: web.Application) -> None:
    app[CRON].add(CronJob("maintenance", 3600, purge))
