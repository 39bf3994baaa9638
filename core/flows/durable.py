"""No execution stays ``running`` after its process died: the ``reap-executions`` periodic job.

A running execution holds a lease that its process renews (``FlowRunner.hold``). When the lease has
run out, the process is gone (or stalled for a whole lease): an execution of the job queue is put
back to ``pending`` with a new ``flows.execute`` job, which resumes it from its checkpointed steps
(as a redelivered job would); a run nobody can take over (a test run, ``invoke``, ``call_flow``:
their caller waited on the process that died) is failed with the reason, and, unless it was a
test run, alerts and starts the workspace's error flow as any failed execution does. A ``waiting``
execution whose due job was lost (deleted by hand) is given a new one.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, update

from patchbay.core.flows.models import FlowExecution
from patchbay.core.jobs.models import Job
from patchbay.core.timeutil import utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: how often the reaper runs
REAP_INTERVAL_SECONDS = 30
#: executions taken per run (the next run takes the rest)
REAP_BATCH = 500
#: runs started in a caller's request: nothing can resume them for it
INLINE_SOURCES = ("test", "invoke", "call_flow")
DIED = "the process running this execution stopped before it ended (its lease ran out)"


async def reap_executions(services: Services) -> dict[str, Any]:
    """Resume or fail the executions whose lease ran out; answers how many of each."""
    from patchbay.core.flows.engine import enqueue_runs

    now = utcnow()
    async with services.db.transaction() as session:
        statement = (
            select(FlowExecution.id, FlowExecution.workspace_id, FlowExecution.flow_id, FlowExecution.trigger_source)
            .where(FlowExecution.status == "running", FlowExecution.lease_until < now)
            .limit(REAP_BATCH)
        )
        if services.db.is_postgres:
            statement = statement.with_for_update(skip_locked=True)
        expired = (await session.execute(statement)).all()
        failed = [row for row in expired if row.trigger_source in INLINE_SOURCES]
        resumed = [row for row in expired if row.trigger_source not in INLINE_SOURCES]
        if failed:
            await _fail(services, session, failed, now)
        if resumed:
            await session.execute(
                update(FlowExecution)
                .where(FlowExecution.id.in_([row.id for row in resumed]), FlowExecution.status == "running")
                .values(status="pending", updated_at=now, lease_until=None)
                .execution_options(synchronize_session=False)
            )
            await enqueue_runs(services, session, [(row.id, row.workspace_id) for row in resumed])
        lost = await _waiting_without_a_job(services, session, now)
        if lost:
            await enqueue_runs(services, session, lost)
    return {"resumed": len(resumed), "failed": len(failed), "woken": len(lost)}


async def _fail(services: Services, session, rows: list, now) -> None:
    """Fail ``rows`` with ``DIED``; those still running alert and start the error flow, as a
    failure the runner stores does (a test run does neither)."""
    from patchbay.core.alerts.service import enqueue_alerts
    from patchbay.core.flows.error_flows import start_error_flows
    from patchbay.core.flows.runner import Outcome

    ended = set(
        await session.scalars(
            update(FlowExecution)
            .where(FlowExecution.id.in_([row.id for row in rows]), FlowExecution.status == "running")
            .values(status="failed", error=DIED, finished_at=now, updated_at=now, lease_until=None)
            .returning(FlowExecution.id)
            .execution_options(synchronize_session=False)
        )
    )
    alerting = [row for row in rows if row.id in ended and row.trigger_source != "test"]
    executions = [{"id": row.id, "workspace_id": row.workspace_id, "flow_id": row.flow_id, "trigger_source": row.trigger_source} for row in alerting]
    await enqueue_alerts(
        services,
        session,
        [{"workspace_id": e["workspace_id"], "flow_id": e["flow_id"], "execution_id": e["id"], "status": "failed", "error": DIED} for e in executions],
    )
    await start_error_flows(services, session, [(execution, Outcome("failed", DIED, [])) for execution in executions])


async def _waiting_without_a_job(services: Services, session, now) -> list[tuple[str, str]]:
    """Executions waiting past their time (by a reaper interval) with no job left to resume them."""
    overdue = (
        await session.execute(
            select(FlowExecution.id, FlowExecution.workspace_id)
            .where(FlowExecution.status == "waiting", FlowExecution.resume_at < now - timedelta(seconds=REAP_INTERVAL_SECONDS))
            .limit(REAP_BATCH)
        )
    ).all()
    if not overdue:
        return []
    pending = await session.scalars(select(Job.payload).where(Job.kind == "flows.execute", Job.status.in_(("queued", "running"))))
    covered = {execution_id for payload in pending for execution_id in payload.get("executionIds") or ()}
    return [(row.id, row.workspace_id) for row in overdue if row.id not in covered]
