"""Alert delivery (spec 6.1): when an execution of a live run ends, one ``alerts.deliver`` job per
matching active subscription is enqueued in the transaction that records the outcome (operator
events, ``operator_events``, reach the same job through a fan-out job of their own); the job hands
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


async def enqueue_alerts(app: Any, session: AsyncSession, ended: list[dict[str, Any]]) -> int:
    """Enqueue, in ``session``, the alerts of ended executions (each ``{workspace_id, flow_id,
    execution_id, status, error}``); one query for all of them, and one for the names of their flows
    when an alert is due. The alert is complete when queued (the flow's name as the execution ended),
    so every attempt of its delivery sends the same thing. Answers how many were enqueued."""
    from patchbay.core.flows.models import Flow

    if not ended:
        return 0
    rows = (
        await session.execute(
            select(AlertSubscription.id, AlertSubscription.workspace_id, AlertSubscription.event_types).where(
                AlertSubscription.workspace_id.in_({e["workspace_id"] for e in ended}), AlertSubscription.is_active.is_(True)
            )
        )
    ).all()
    if not rows:
        return 0
    timestamp = iso(utcnow())
    by_workspace: dict[str, list[dict[str, Any]]] = {}
    for execution in ended:
        event = event_for(execution["status"])
        alert = {"event": event, "timestamp": timestamp, "flowId": execution["flow_id"], "executionId": execution["execution_id"], "error": execution["error"] or ""}
        for row in rows:
            if row.workspace_id == execution["workspace_id"] and event in (row.event_types or []):
                by_workspace.setdefault(row.workspace_id, []).append({"subscriptionId": row.id, "alert": alert})
    alerts = [payload["alert"] for payloads in by_workspace.values() for payload in payloads]
    if alerts:
        names = dict((await session.execute(select(Flow.id, Flow.name).where(Flow.id.in_({alert["flowId"] for alert in alerts})))).all())
        for alert in alerts:
            alert["flowName"] = names.get(alert["flowId"]) or ""
    for workspace_id, payloads in by_workspace.items():
        await app[JOBS].enqueue_many(session, JOB_KIND, payloads, workspace_id=workspace_id)
    return sum(len(p) for p in by_workspace.values())


async def deliver_job(context: JobContext) -> None:
    from patchbay.core.flows.models import Flow

    app = context.app
    async with app[DB].session() as session:
        subscription = await session.get(AlertSubscription, context.payload["subscriptionId"])
        if subscription is None or not subscription.is_active:
            return
        alert = dict(context.payload["alert"])
        if "flowId" in alert and "flowName" not in alert:  # queued by an earlier release
            alert["flowName"] = await session.scalar(select(Flow.name).where(Flow.id == alert["flowId"])) or ""
    channel = app[REGISTRY].get("alert_channels", subscription.channel)
    if channel is None:
        raise PermanentFailure(f"no alert channel named {subscription.channel!r} is installed")
    await channel.send(alert, subscription.target, AlertContext(app[OUTBOUND].session, app[SETTINGS].smtp, app[OUTBOUND].check))
