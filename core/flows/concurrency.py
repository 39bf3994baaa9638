"""Per-workspace limits of executions run at once (``maxConcurrentExecutions``, see
``workspace_settings``), across every process: a ``flows.execute`` job admits its executions while
the workspace has fewer running than its limit; the others stay ``pending`` and get a job due in
``RETRY_SECONDS``, so a workspace over its limit holds no worker and cannot starve the others.

Admissions of one workspace take turns (an advisory lock on PostgreSQL; SQLite's single writer,
taken by the admission's first statement), and an admitted execution is marked ``running`` with a
lease in the same transaction, so the next admission counts it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import func, select, text, update

from patchbay.core.flows.models import FlowExecution
from patchbay.core.timeutil import utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: how soon executions not admitted are offered again
RETRY_SECONDS = 1.0


async def admit(services: Services, workspace_id: str, ids: list[str], limit: int) -> list[str]:
    """The executions of ``ids`` that may run now (those already running among them, then pending
    ones and waiting ones now due, while the workspace is under ``limit``); the others are queued
    again (a waiting one not due yet is left to its own job)."""
    from patchbay.core.flows.engine import enqueue_runs

    now = utcnow()
    async with services.db.transaction() as session:
        if services.db.is_postgres:
            await session.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"flows.admit:{workspace_id}"})
        else:  # a write first: the transaction holds SQLite's write lock before it counts
            await session.execute(update(FlowExecution).where(FlowExecution.id.in_(ids)).values(status=FlowExecution.status))
        states = {
            row.id: "pending" if row.status == "waiting" and row.resume_at <= now else row.status
            for row in await session.execute(select(FlowExecution.id, FlowExecution.status, FlowExecution.resume_at).where(FlowExecution.id.in_(ids)))
        }
        running = await session.scalar(
            select(func.count()).where(FlowExecution.workspace_id == workspace_id, FlowExecution.status == "running", FlowExecution.id.not_in(ids))
        )
        already = [execution_id for execution_id in ids if states.get(execution_id) == "running"]
        candidates = [execution_id for execution_id in ids if states.get(execution_id) == "pending"]
        free = max(0, limit - int(running or 0) - len(already))
        admitted, rest = candidates[:free], candidates[free:]
        if admitted:
            await session.execute(
                update(FlowExecution)
                .where(FlowExecution.id.in_(admitted))
                .values(status="running", lease_until=services.flow_runner.lease_until(now), updated_at=now)
                .execution_options(synchronize_session=False)
            )
        if rest:
            await enqueue_runs(services, session, [(execution_id, workspace_id) for execution_id in rest], delay=RETRY_SECONDS)
    return [*already, *admitted]
