"""The webhooks feature: inbound route, event log, subscriptions, their jobs and the renewal cron."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from patchbay.core.appkeys import CRON, DB, JOBS, SETTINGS, WEBHOOK_INGEST
from patchbay.core.jobs.cron import CronJob
from patchbay.core.jobs.queue import concatenating
from patchbay.core.webhooks import events, inbound, subscriptions
from patchbay.core.webhooks.delivery import DELIVER_BATCH_JOB, DELIVER_JOB, deliver_batch_job, deliver_job
from patchbay.core.webhooks.ingest import PROCESS_JOB, IngestWriter
from patchbay.core.webhooks.listeners import get_listeners
from patchbay.core.webhooks.processing import process_job
from patchbay.core.webhooks.renewal import renew_webhook_subscriptions


async def _ingest_writer(app: web.Application) -> AsyncIterator[None]:
    app[WEBHOOK_INGEST].start()
    yield
    await app[WEBHOOK_INGEST].close()


def setup(app: web.Application) -> None:
    app.router.add_routes(events.routes)  # literal /webhooks/events... before /webhooks/{type}/...
    app.router.add_routes(subscriptions.routes)
    app.router.add_routes(inbound.routes)
    get_listeners(app)
    settings = app[SETTINGS].webhooks
    app[WEBHOOK_INGEST] = IngestWriter(app[DB], app[JOBS], batch_ms=settings.ingest_batch_ms, batch_size=settings.ingest_batch_size)
    app.cleanup_ctx.append(_ingest_writer)
    # one job per group-committed batch of events; under load a worker runs the batches it claims together
    app[JOBS].register(PROCESS_JOB, process_job, max_attempts=10, merge=concatenating("event_ids"))
    app[JOBS].register(DELIVER_JOB, deliver_job, max_attempts=3)
    app[JOBS].register(DELIVER_BATCH_JOB, deliver_batch_job, max_attempts=3, merge=concatenating("delivery_ids"))
    app[CRON].add(CronJob("renew-webhook-subscriptions", 3600, renew_webhook_subscriptions))
