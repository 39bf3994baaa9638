"""Alert subscriptions (spec 4.11) and alert delivery (spec 6.1).

Delivery: when an execution of a live run ends, one ``alerts.deliver`` job per
matching active subscription is enqueued in the transaction that records the outcome (operator
events, ``operator_events``, reach the same job through a fan-out job of their own); the job hands
the alert to the channel registered under the subscription's ``channel`` (``register_alert_channels``)
and the queue retries it when the channel raises. Delivery never blocks the execution."""

from __future__ import annotations

from typing import Any

import attrs
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.alerts import operator_events
from patchbay.core.alerts.models import AlertSubscription
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.jobs.cron import CronJob
from patchbay.core.jobs.queue import JobContext, PermanentFailure
from patchbay.core.outbound import UnsafeTarget
from patchbay.core.services import Services
from patchbay.core.timeutil import iso, utcnow

JOB_KIND = "alerts.deliver"


def install(services: Services) -> None:
    services.jobs.register(JOB_KIND, deliver_job, max_attempts=5, backoff_base=2.0, backoff_cap=300.0)
    services.jobs.register(operator_events.FANOUT_JOB, operator_events.fanout_job, max_attempts=operator_events.FANOUT_MAX_ATTEMPTS, backoff_base=2.0)
    services.cron.add(CronJob("job-failures", operator_events.CHECK_INTERVAL_SECONDS, operator_events.check_job_failures))


@attrs.frozen
class AlertContext:
    """What a channel gets besides the alert and the target: the shared HTTP client, the SMTP
    settings and ``check(url)``, which raises ``ValueError`` for a URL that is not an allowed target."""

    http: Any
    smtp: Any
    check: Any


def event_for(status: str) -> str:
    return "flow.succeeded" if status == "completed" else "flow.failed"


async def enqueue_alerts(services: Services, session: AsyncSession, ended: list[dict[str, Any]]) -> int:
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
        alert = {
            "event": event,
            "timestamp": timestamp,
            "flowId": execution["flow_id"],
            "executionId": execution["execution_id"],
            "error": execution["error"] or "",
        }
        for row in rows:
            if row.workspace_id == execution["workspace_id"] and event in (row.event_types or []):
                by_workspace.setdefault(row.workspace_id, []).append({"subscriptionId": row.id, "alert": alert})
    alerts = [payload["alert"] for payloads in by_workspace.values() for payload in payloads]
    if alerts:
        names = dict((await session.execute(select(Flow.id, Flow.name).where(Flow.id.in_({alert["flowId"] for alert in alerts})))).all())
        for alert in alerts:
            alert["flowName"] = names.get(alert["flowId"]) or ""
    for workspace_id, payloads in by_workspace.items():
        await services.jobs.enqueue_many(session, JOB_KIND, payloads, workspace_id=workspace_id)
    return sum(len(p) for p in by_workspace.values())


async def deliver_job(context: JobContext) -> None:
    from patchbay.core.flows.models import Flow

    services = context.services
    async with services.db.session() as session:
        subscription = await session.get(AlertSubscription, context.payload["subscriptionId"])
        if subscription is None or not subscription.is_active:
            return
        alert = dict(context.payload["alert"])
        if "flowId" in alert and "flowName" not in alert:  # queued by an earlier release
            alert["flowName"] = await session.scalar(select(Flow.name).where(Flow.id == alert["flowId"])) or ""
    channel = services.registry.get("alert_channels", subscription.channel)
    if channel is None:
        raise PermanentFailure(f"no alert channel named {subscription.channel!r} is installed")
    await channel.send(alert, subscription.target, AlertContext(services.outbound.session, services.settings.smtp, services.outbound.check))


# -- subscriptions, each in the workspace's own session ---------------------------------------------


def _check_channel(services: Services, channel: str) -> None:
    """Invalid unless ``channel`` is installed and can deliver with this deployment's settings."""
    channels = services.registry.objects("alert_channels")
    if channel not in channels:
        raise Invalid(f"channel must be one of {', '.join(sorted(channels)) or '(none installed)'}")
    problem = getattr(channels[channel], "configuration_problem", lambda _settings: None)(services.settings)
    if problem:
        raise Invalid(f"channel {channel} cannot deliver here: {problem}")


def _check_target(services: Services, channel: str, target: str) -> str:
    """``target``, stripped: an email address for the email channel, a URL the deployment may send
    to for the others; Invalid otherwise."""
    target = target.strip()
    if not target:
        raise Invalid("target is required")
    if channel == "email":
        local, _, domain = target.partition("@")
        if not local or "." not in domain:
            raise Invalid("target must be an email address for the email channel")
    else:
        try:
            services.outbound.check(target)
        except UnsafeTarget as error:
            raise Invalid(f"target: {error}") from None
    return target


async def list_alerts(services: Services, workspace_id: str) -> list[AlertSubscription]:
    """The workspace's alert subscriptions, oldest first."""
    async with services.db.session(tenant=workspace_id) as session:
        return list((await session.scalars(select(AlertSubscription).order_by(AlertSubscription.created_at))).all())


async def create_alert(
    services: Services, workspace_id: str, *, channel: str, target: str, event_types: list[str] | None, is_active: bool
) -> AlertSubscription:
    """A new subscription of ``target`` on ``channel`` to ``event_types`` (None: ``flow.failed``)."""
    _check_channel(services, channel)
    target = _check_target(services, channel, target)
    async with services.db.transaction(tenant=workspace_id) as session:
        subscription = AlertSubscription(channel=channel, target=target, event_types=list(dict.fromkeys(event_types or ["flow.failed"])), is_active=is_active)
        session.add(subscription)
    return subscription


async def _load(session: AsyncSession, subscription_id: str) -> AlertSubscription:
    subscription = await session.scalar(select(AlertSubscription).where(AlertSubscription.id == subscription_id))
    if subscription is None:
        raise NotFound("Alert subscription not found")
    return subscription


async def update_alert(
    services: Services, workspace_id: str, subscription_id: str, *, is_active: bool | None, target: str | None, event_types: list[str] | None
) -> AlertSubscription:
    """Change what is given (None: unchanged); NotFound for another workspace's subscription."""
    async with services.db.transaction(tenant=workspace_id) as session:
        subscription = await _load(session, subscription_id)
        if is_active is not None:
            subscription.is_active = is_active
        if target is not None:
            subscription.target = _check_target(services, subscription.channel, target)
        if event_types is not None:
            subscription.event_types = list(dict.fromkeys(event_types))
    return subscription


async def delete_alert(services: Services, workspace_id: str, subscription_id: str) -> None:
    async with services.db.transaction(tenant=workspace_id) as session:
        await session.delete(await _load(session, subscription_id))
