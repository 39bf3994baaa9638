"""What the flows domain adds to the services (``core.services.SERVICE_MODULES``): the runner of
executions, the ``flows.execute`` job kind, the ``poll-triggers`` and ``run-schedules`` periodic jobs,
the listener that starts flows on inbound webhook events, and the system templates seeded at start."""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchbay.core.flows import approvals, durable, engine, schedules, templates, triggers
from patchbay.core.flows.runner import FlowRunner
from patchbay.core.jobs.cron import CronJob
from patchbay.core.webhooks.listeners import WebhookListeners

if TYPE_CHECKING:
    from patchbay.core.services import Services


def install(services: Services) -> None:
    services.flow_runner = FlowRunner(services)
    approvals.install(services)
    services.jobs.register(engine.JOB_KIND, engine.execute_job, max_attempts=10, backoff_base=1.0, backoff_cap=60.0)
    services.cron.add(CronJob("poll-triggers", triggers.POLL_INTERVAL_SECONDS, triggers.poll_triggers))
    services.cron.add(CronJob("run-schedules", schedules.RUN_INTERVAL_SECONDS, schedules.run_schedules))
    services.cron.add(CronJob("reap-executions", durable.REAP_INTERVAL_SECONDS, durable.reap_executions))
    if services.webhook_listeners is None:
        services.webhook_listeners = WebhookListeners()
    services.webhook_listeners.add(triggers.InboundEventListener(services))
    services.add_resource(templates.seeded_system_templates)
