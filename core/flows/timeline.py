"""Flow executions as entries of the operations timeline (``core.timeline``), and one execution
of the workspace found by its id alone (the Logs page's detail)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select

from patchbay.core.errors import NotFound
from patchbay.core.flows.models import Flow, FlowExecution, FlowExecutionStep, FlowTriggerSubscription
from patchbay.core.flows.service import execution_steps
from patchbay.core.timeline import Entry, Query

if TYPE_CHECKING:
    from patchbay.core.services import Services

EXECUTION_STATUS = {"ok": ("completed",), "failed": ("failed",), "pending": ("pending", "running")}


def _status(value: str) -> str:
    return next((status for status, values in EXECUTION_STATUS.items() if value in values), "pending")


async def log_entries(services: Services, query: Query) -> list[Entry]:
    """The executions the query asks for. ``provider`` and ``connection`` match the trigger
    subscription that started an execution (a run started otherwise has neither)."""
    if not query.wants("execution"):
        return []
    conditions = query.filters(
        workspace=FlowExecution.workspace_id,
        created=FlowExecution.created_at,
        row_id=FlowExecution.id,
        status=(FlowExecution.status, EXECUTION_STATUS),
        search=(FlowExecution.id, FlowExecution.flow_id, FlowExecution.replay_of),
    )
    statement = select(FlowExecution, Flow.name, FlowTriggerSubscription.provider_type, FlowTriggerSubscription.connection_id).join(
        Flow, Flow.id == FlowExecution.flow_id
    )
    if query.provider or query.connection_id:
        statement = statement.join(FlowTriggerSubscription, FlowTriggerSubscription.id == FlowExecution.subscription_id)
        if query.provider:
            conditions.append(FlowTriggerSubscription.provider_type == query.provider)
        if query.connection_id:
            conditions.append(FlowTriggerSubscription.connection_id == query.connection_id)
    else:
        statement = statement.outerjoin(FlowTriggerSubscription, FlowTriggerSubscription.id == FlowExecution.subscription_id)
    statement = statement.where(*conditions).order_by(*query.order(FlowExecution.created_at, FlowExecution.id)).limit(query.limit)
    async with services.db.session(tenant=query.workspace_id) as session:
        rows = (await session.execute(statement)).all()
    return [
        Entry(
            kind="execution",
            id=execution.id,
            at=execution.created_at,
            status=_status(execution.status),
            detail_status=execution.status,
            summary=f"{name} ({execution.trigger_source})" + (f": {execution.error[:120]}" if execution.error else ""),
            provider=provider,
            connection_id=connection_id,
            duration_ms=execution.duration_ms,
        )
        for execution, name, provider, connection_id in rows
    ]


async def execution_by_id(services: Services, *, workspace_id: str, execution_id: str) -> tuple[FlowExecution, str, list[FlowExecutionStep]]:
    """The workspace's execution, its flow's name and its steps in order; NotFound."""
    async with services.db.session(tenant=workspace_id) as session:
        found = (
            await session.execute(
                select(FlowExecution, Flow.name)
                .join(Flow, Flow.id == FlowExecution.flow_id)
                .where(FlowExecution.id == execution_id, FlowExecution.workspace_id == workspace_id)
            )
        ).first()
        if found is None:
            raise NotFound("Execution not found")
        execution, name = found
        return execution, name, await execution_steps(session, execution.id)
