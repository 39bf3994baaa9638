"""Alert delivery (spec 6.1): when an execution of a live run ends, one ``alerts.deliver`` job per
matching active subscription is enqueued in the transaction that records the outcome; the job hands
the alert to the channel registered under the subscription's ``channel`` (``register_alert_channels``)
and the queue retries it when the channel raises. Delivery never blocks the execution."""

from __future__ import annotations

from typing import Any

import attrs
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.alerts.models import AlertSubscription
from patchbay.core.appkeys import DB, JOBS, OUTBOUND, REGISTRY, SETTINGS
from patchbay.core.jobs.queue import JobContext, PermanentFailure
from patchbay.core.timeutil import iso, utcnow

JOB_KIND = "alerts.deliver"


@attrs.frozen
class AlertContext:
    """What a channel gets besides the alert and the target: the shared HTTP client, the SMTP
    settings and ``check(url)``, which raises ``ValueError`` for a URL that is not an allowed target."""

    http: Any
    smtp: Any
    check: Any


def event_for(status: str) -> str:
    return "flow.succeeded" if status == "completed" else "flow.failed"


async def enqueue_alerts(app: Any, session: AsyncSession, *, workspace_id: str, flow_id: str, execution_id: str, status: str, error: str | None) -> int:
    """Enqueue the alerts of an ended execution in ``session``; answers how many."""
    event = event_for(status)
    rows = (
        await session.execute(
            select(AlertSubscription.id, AlertSubscription.event_types).where(
                AlertSubscription.workspace_id == workspace_id, AlertSubscription.is_active.is_(True)
            )
        )
    ).all()
    matching = [row.id for row in rows if event in (row.event_types or [])]
    if not matching:
        return 0
    alert = {"event": event, "timestamp": iso(utcnow()), "flowId": flow_id, "executionId": execution_id, "error": error or ""}
    await app[JOBS].enqueue_many(session, JOB_KIND, [{"subscriptionId": sid, "alert": alert} for sid in matching], workspace_id=workspace_id)
    return len(matching)


async def deliver_job(context: JobContext) -> None:
    from patchbay.core.flows.models import Flow

    app = context.app
    async with app[DB].session() as session:
        subscription = await session.get(AlertSubscription, context.payload["subscriptionId"])
        if subscription is None or not subscription.is_active:
            return
        alert = dict(context.payload["alert"])
        alert["flowName"] = await session.scalar(select(Flow.name).where(Flow.id == alert["flowId"])) or ""
    channel = app[REGISTRY].get("alert_channels", subscription.channel)
    if channel is None:
        raise PermanentFailure(f"no alert channel named {subscription.channel!r} is installed")
    await channel.send(alert, subscription.target, AlertContext(app[OUTBOUND].session, app[SETTINGS].smtp, app[OUTBOUND].check))
