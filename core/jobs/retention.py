"""Retention: purge records older than their configured age (``[retention]``), in batches.

Each kind is deleted ``BATCH`` rows per statement (so no transaction holds a long lock and the
write-ahead log stays small), for at most ``MAX_BATCHES`` statements per maintenance run; what is
left is purged by the next run. Webhook events keep their log row: only the stored raw body is
cleared, since deliveries and leads refer to the event. Flow executions are purged once finished,
with their step records.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select, update

from patchbay.core.connections.models import ProxyCallLog
from patchbay.core.flows.models import FlowExecution, FlowExecutionStep
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks.models import WebhookAttempt, WebhookEvent
from patchbay.core.workspaces.audit import WorkspaceAuditEvent

if TYPE_CHECKING:
    from patchbay.core.services import Services

BATCH = 1000
MAX_BATCHES = 100


async def _in_batches(db, chosen, *writes) -> int:
    """Run each of ``writes(ids)`` on batches of the ids ``chosen`` selects, until none is left."""
    total = 0
    for _ in range(MAX_BATCHES):
        async with db.transaction() as session:
            ids = list((await session.scalars(chosen.limit(BATCH))).all())
            for write in writes if ids else ():
                await session.execute(write(ids).execution_options(synchronize_session=False))
        total += len(ids)
        if len(ids) < BATCH:
            break
    return total


def _deleting(model, age_column, cutoff):
    return select(model.id).where(age_column < cutoff), lambda ids: delete(model).where(model.id.in_(ids))


def _purging_executions(cutoff):
    finished = select(FlowExecution.id).where(FlowExecution.status.in_(("completed", "failed")), FlowExecution.finished_at < cutoff)
    return (
        finished,
        lambda ids: delete(FlowExecutionStep).where(FlowExecutionStep.execution_id.in_(ids)),
        lambda ids: delete(FlowExecution).where(FlowExecution.id.in_(ids)),
    )


def _clearing_event_bodies(cutoff):
    stored = select(WebhookEvent.id).where(WebhookEvent.created_at < cutoff, WebhookEvent.body.is_not(None), WebhookEvent.status != "RECEIVED")
    return stored, lambda ids: update(WebhookEvent).where(WebhookEvent.id.in_(ids)).values(body=None)


async def purge_expired(services: Services) -> dict[str, Any]:
    """Apply the retention settings once; answers how many records of each kind were purged."""
    retention = services.settings.retention
    db = services.db
    now = utcnow()
    plans = {
        "webhookEventBodiesCleared": (retention.webhook_event_days, _clearing_event_bodies),
        "proxyCallLogsPurged": (retention.proxy_log_days, lambda cutoff: _deleting(ProxyCallLog, ProxyCallLog.created_at, cutoff)),
        "executionsPurged": (retention.execution_days, _purging_executions),
        "deliveryAttemptsPurged": (retention.delivery_attempt_days, lambda cutoff: _deleting(WebhookAttempt, WebhookAttempt.created_at, cutoff)),
        "workspaceAuditEventsPurged": (
            retention.workspace_audit_days,
            lambda cutoff: _deleting(WorkspaceAuditEvent, WorkspaceAuditEvent.created_at, cutoff),
        ),
    }
    results = {}
    for name, (days, plan) in plans.items():
        results[name] = await _in_batches(db, *plan(now - timedelta(days=days))) if days > 0 else 0
    return results
