"""A workspace's executions (spec 4.8, 4.12): pages of them (one flow's or the task history across
every flow), one with its steps, and replay."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.errors import Invalid, NotFound
from patchbay.core.flows import engine
from patchbay.core.flows.models import EXECUTION_STATUSES, FlowExecution, FlowExecutionStep
from patchbay.core.flows.service import execution_steps, get_flow

if TYPE_CHECKING:
    from patchbay.core.services import Services


async def execution_page(
    services: Services, *, workspace_id: str, flow_id: str | None, status: str | None, page: int, limit: int, of_flow: bool = False
) -> tuple[list[FlowExecution], int]:
    """A page of executions, newest first, and how many match: of ``flow_id`` when given, of
    ``status`` when given. ``of_flow``: the flow must exist (``NotFound``)."""
    statement = select(FlowExecution)
    if status:
        if status not in EXECUTION_STATUSES:
            raise Invalid(f"status must be one of {', '.join(EXECUTION_STATUSES)}")
        statement = statement.where(FlowExecution.status == status)
    if flow_id:
        statement = statement.where(FlowExecution.flow_id == flow_id)
    async with services.db.session(tenant=workspace_id) as session:
        if of_flow:
            await get_flow(session, flow_id)
        total = await session.scalar(select(func.count()).select_from(statement.subquery()))
        rows = (await session.scalars(statement.order_by(FlowExecution.created_at.desc(), FlowExecution.id).offset((page - 1) * limit).limit(limit))).all()
    return list(rows), int(total or 0)


async def _execution(session: AsyncSession, flow_id: str, execution_id: str) -> FlowExecution:
    execution = await session.scalar(select(FlowExecution).where(FlowExecution.id == execution_id, FlowExecution.flow_id == flow_id))
    if execution is None:
        raise NotFound("Execution not found")
    return execution


async def execution_with_steps(services: Services, *, workspace_id: str, flow_id: str, execution_id: str) -> tuple[FlowExecution, list[FlowExecutionStep]]:
    """The flow's execution and its steps in order; ``NotFound`` when there is none."""
    async with services.db.session(tenant=workspace_id) as session:
        execution = await _execution(session, flow_id, execution_id)
        return execution, await execution_steps(session, execution.id)


async def replay(services: Services, *, workspace_id: str, flow_id: str, execution_id: str) -> FlowExecution:
    """A new (pending) execution with the original's trigger payload: of the published version, or
    of the current steps of a flow never published."""
    async with services.db.transaction(tenant=workspace_id) as session:
        flow = await get_flow(session, flow_id)
        original = await _execution(session, flow.id, execution_id)
        row = {
            "workspace_id": workspace_id,
            "flow_id": flow.id,
            "trigger_source": "replay",
            "trigger_payload": original.trigger_payload,
            "replay_of": original.id,
        }
        if flow.published_version is not None:
            row["version"] = flow.published_version
        else:
            row["steps"] = flow.steps
        (created,) = await engine.create_executions(services, session, [row])
        return await session.get(FlowExecution, created)
