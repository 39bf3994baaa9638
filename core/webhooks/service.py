"""What the webhooks domain adds to the services: the listeners of inbound events, the group-commit
writer of inbound events (started and stopped with the services), the processing and delivery job
kinds, and the ``renew-webhook-subscriptions`` cron job."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from patchbay.core.jobs.cron import CronJob
from patchbay.core.jobs.queue import concatenating
from patchbay.core.services import Services
from patchbay.core.webhooks.delivery import DELIVER_BATCH_JOB, DELIVER_JOB, deliver_batch_job, deliver_job
from patchbay.core.webhooks.ingest import PROCESS_JOB, IngestWriter
from patchbay.core.webhooks.listeners import WebhookListeners
from patchbay.core.webhooks.processing import process_job
from patchbay.core.webhooks.renewal import renew_webhook_subscriptions


def install(services: Services) -> None:
    if services.webhook_listeners is None:  # another domain's install may have added a listener first
        services.webhook_listeners = WebhookListeners()
    settings = services.settings.webhooks
    services.webhook_ingest = IngestWriter(services.db, services.jobs, batch_ms=settings.ingest_batch_ms, batch_size=settings.ingest_batch_size)
    services.add_resource(_ingest_writer)
    # one job per group-committed batch of events; under load a worker runs the batches it claims together
    services.jobs.register(PROCESS_JOB, process_job, max_attempts=10, merge=concatenating("event_ids"))
    services.jobs.register(DELIVER_JOB, deliver_job, max_attempts=3)
    services.jobs.register(DELIVER_BATCH_JOB, deliver_batch_job, max_attempts=3, merge=concatenating("delivery_ids"))
    services.cron.add(CronJob("renew-webhook-subscriptions", 3600, renew_webhook_subscriptions))


@contextlib.asynccontextmanager
async def _ingest_writer(services: Services) -> AsyncIterator[None]:
    services.webhook_ingest.start()
    try:
        yield
    finally:
        await services.webhook_ingest.close()
