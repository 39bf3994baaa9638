"""Housekeeping of the framework's own tables: finished jobs, expired rate-limit counters, and the
records past their retention (:mod:`patchbay.core.jobs.retention`), as the hourly ``maintenance``
periodic job."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete

from patchbay.core.jobs.cron import CronJob
from patchbay.core.jobs.models import Job
from patchbay.core.jobs.retention import purge_expired
from patchbay.core.timeutil import utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: Finished jobs are kept this long for inspection (their dedupe keys guard cron ticks meanwhile).
KEEP_FINISHED = timedelta(days=7)


async def purge(services: Services) -> dict[str, Any]:
    async with services.db.transaction() as session:
        jobs = await session.execute(delete(Job).where(Job.status.in_(("done", "failed")), Job.updated_at < utcnow() - KEEP_FINISHED))
    counters = await services.rate_limiter.purge()
    return {"jobsPurged": jobs.rowcount, "counterRowsPurged": counters, **await purge_expired(services)}


def install(services: Services) -> None:
    services.cron.add(CronJob("maintenance", 3600, purge))
