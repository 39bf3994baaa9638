"""Operator events: things that broke and need a person, told to the alert channels like flow
alerts but as events of their own.

- ``connection.invalid``: a connection's refresh failed for good (the provider answered
  ``invalid_grant``); nothing will use it until someone reconnects it.
- ``webhook.subscription_disabled``: an outbound webhook subscription was switched off after its
  deliveries kept failing (or its endpoint answered 410).
- ``jobs.failing``: background jobs of one kind failed for good ``FAILING_THRESHOLD`` times or more
  within ``FAILING_WINDOW_SECONDS`` (checked by the ``job-failures`` cron job, told at most once
  per kind, workspace and window).

Where one of these happens, one call (:func:`record`, or a helper named after the event) adds an
``alerts.operator_event`` job to the transaction that records it, so the event is told if and only
if that transaction commits. The job finds the alert subscriptions that chose the event type and
enqueues one ``alerts.deliver`` per subscription, as flow alerts are delivered. Events of a
workspace go to that workspace's subscriptions; events with no workspace (jobs of the deployment
itself) go to every subscription that chose the type, without error texts that could belong to
another tenant.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, object_session

from patchbay.core.alerts.models import OPERATOR_EVENT_TYPES, AlertSubscription
from patchbay.core.jobs.models import Job
from patchbay.core.jobs.queue import JobContext
from patchbay.core.services import Services
from patchbay.core.timeutil import iso, new_id, utcnow

CONNECTION_INVALID, WEBHOOK_DISABLED, JOBS_FAILING, AGENT_APPROVAL_REQUESTED = OPERATOR_EVENT_TYPES

FANOUT_JOB = "alerts.operator_event"
FANOUT_MAX_ATTEMPTS = 5
FAILING_THRESHOLD = 5
FAILING_WINDOW_SECONDS = 900
CHECK_INTERVAL_SECONDS = 300
#: job kinds whose failures are not told through alerts (their failure is the alert failing)
UNTOLD_KINDS = ("alerts.deliver", FANOUT_JOB)


def record(session: Any, event: str, summary: str, *, workspace_id: str | None, details: dict[str, Any]) -> None:
    """Add the event's fan-out job to ``session`` (an ``AsyncSession`` or a sync ``Session``): it
    is told when the transaction commits. ``summary`` is one human line; ``details`` is JSON."""
    if event not in OPERATOR_EVENT_TYPES:
        raise ValueError(f"unknown operator event {event!r}")
    now = utcnow()
    alert = {"event": event, "timestamp": iso(now), "workspaceId": workspace_id, "summary": summary, "details": details}
    session.add(
        Job(
            id=new_id(),
            kind=FANOUT_JOB,
            payload={"alert": alert},
            status="queued",
            run_at=now,
            attempts=0,
            max_attempts=FANOUT_MAX_ATTEMPTS,
            workspace_id=workspace_id,
        )
    )


def connection_invalid(session: Any, connection: Any, reason: str) -> None:
    """A connection's refresh failed for good; ``connection`` has ``id``, ``provider``, ``workspace_id``."""
    record(
        session,
        CONNECTION_INVALID,
        f"Connection {connection.id} ({connection.provider}) needs reconnecting: its refresh was refused",
        workspace_id=connection.workspace_id,
        details={"connectionId": connection.id, "provider": connection.provider, "reason": reason},
    )


def webhook_subscription_disabled(subscription: Any, reason: str) -> None:
    """A webhook subscription was switched off; called with the ORM object in the transaction that
    switches it off (its session is found from the object)."""
    session: Session | None = object_session(subscription)
    if session is None:
        raise ValueError("the subscription is not attached to a session")
    record(
        session,
        WEBHOOK_DISABLED,
        f"Webhook subscription {subscription.id} to {subscription.url} was disabled: {reason}",
        workspace_id=subscription.workspace_id,
        details={"subscriptionId": subscription.id, "provider": subscription.provider, "url": subscription.url, "reason": reason},
    )


async def check_job_failures(services: Services) -> dict[str, Any]:
    """The ``job-failures`` cron job: tell every (kind, workspace) with ``FAILING_THRESHOLD`` or more
    jobs failed for good in the last window, once per window (a dedupe key of the window's tick)."""
    now = utcnow()
    since = now - timedelta(seconds=FAILING_WINDOW_SECONDS)
    async with services.db.session() as session:
        rows = (
            await session.execute(
                select(Job.kind, Job.workspace_id, func.count(), func.max(Job.updated_at))
                .where(Job.status == "failed", Job.updated_at >= since, Job.kind.not_in(UNTOLD_KINDS))
                .group_by(Job.kind, Job.workspace_id)
                .having(func.count() >= FAILING_THRESHOLD)
            )
        ).all()
    tick = int(now.timestamp() // FAILING_WINDOW_SECONDS)
    told = 0
    for kind, workspace_id, count, _last in rows:
        details: dict[str, Any] = {"kind": kind, "failed": count, "windowSeconds": FAILING_WINDOW_SECONDS}
        if workspace_id is not None:
            details["lastError"] = await _last_error(services, kind, workspace_id)
        alert = {
            "event": JOBS_FAILING,
            "timestamp": iso(now),
            "workspaceId": workspace_id,
            "summary": f"{count} {kind} jobs failed in the last {FAILING_WINDOW_SECONDS // 60} minutes",
            "details": details,
        }
        if await services.jobs.enqueue_once(FANOUT_JOB, {"alert": alert}, f"{JOBS_FAILING}:{kind}:{workspace_id or '-'}:{tick}"):
            told += 1
    return {"failingKinds": len(rows), "told": told}


async def _last_error(services: Services, kind: str, workspace_id: str) -> str:
    async with services.db.session() as session:
        error = await session.scalar(
            select(Job.last_error).where(Job.kind == kind, Job.workspace_id == workspace_id, Job.status == "failed").order_by(Job.updated_at.desc()).limit(1)
        )
    return (error or "")[:1000]


async def fanout_job(context: JobContext) -> None:
    """Enqueue one ``alerts.deliver`` per active subscription that chose the event."""
    from patchbay.core.alerts.service import JOB_KIND

    services = context.services
    alert = context.payload["alert"]
    workspace_id = alert.get("workspaceId")
    query = select(AlertSubscription.id, AlertSubscription.workspace_id, AlertSubscription.event_types).where(AlertSubscription.is_active.is_(True))
    if workspace_id is not None:
        query = query.where(AlertSubscription.workspace_id == workspace_id)
    async with services.db.transaction() as session:
        by_workspace: dict[str, list[dict[str, Any]]] = {}
        for row in (await session.execute(query)).all():
            if alert["event"] in (row.event_types or []):
                by_workspace.setdefault(row.workspace_id, []).append({"subscriptionId": row.id, "alert": alert})
        for target_workspace, payloads in by_workspace.items():
            await services.jobs.enqueue_many(session, JOB_KIND, payloads, workspace_id=target_workspace)
