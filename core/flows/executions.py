"""A workspace's executions (spec 4.8, 4.12): pages of them (one flow's or the task history across
every flow), one with its steps, replay, and retry from a failed step."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.errors import Conflict, Invalid, NotFound
from patchbay.core.flows import engine
from patchbay.core.flows.models import EXECUTION_STATUSES, FlowExecution, FlowExecutionStep
from patchbay.core.flows.plan import plan_steps
from patchbay.core.flows.service import execution_steps, get_flow
from patchbay.core.flows.steps import StepFailed

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


async def execution_keyset(
    services: Services,
    *,
    workspace_id: str,
    flow_id: str | None,
    status: str | None,
    since: datetime | None,
    until: datetime | None,
    before: tuple[datetime, str] | None,
    limit: int,
) -> tuple[list[FlowExecution], tuple[datetime, str] | None]:
    """A page of executions, newest first, by keyset (the console's lists): those created before
    ``before`` (``(created_at, id)`` of the previous page's last row), of ``flow_id`` (which must
    exist: ``NotFound``), ``status``, and created in ``[since, until)`` when given. Answers the rows
    and the key of the next page (None on the last one)."""
    conditions = []
    if status:
        if status not in EXECUTION_STATUSES:
            raise Invalid(f"status must be one of {', '.join(EXECUTION_STATUSES)}")
        conditions.append(FlowExecution.status == status)
    if flow_id:
        conditions.append(FlowExecution.flow_id == flow_id)
    if since is not None:
        conditions.append(FlowExecution.created_at >= since)
    if until is not None:
        conditions.append(FlowExecution.created_at < until)
    if before is not None:
        moment, last_id = before
        conditions.append(or_(FlowExecution.created_at < moment, and_(FlowExecution.created_at == moment, FlowExecution.id < last_id)))
    statement = select(FlowExecution).where(*conditions).order_by(FlowExecution.created_at.desc(), FlowExecution.id.desc()).limit(limit + 1)
    async with services.db.session(tenant=workspace_id) as session:
        if flow_id:
            await get_flow(session, flow_id)
        rows = list((await session.scalars(statement)).all())
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, ((rows[-1].created_at, rows[-1].id) if more else None)


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


async def failed_since(services: Services, *, workspace_id: str, since: datetime, limit: int) -> tuple[list[FlowExecution], int]:
    """The workspace's executions that failed since ``since``, newest first, at most ``limit``, and
    how many there are (the console's home)."""
    failed = (FlowExecution.status == "failed") & (FlowExecution.created_at >= since)
    async with services.db.session(tenant=workspace_id) as session:
        total = await session.scalar(select(func.count()).select_from(FlowExecution).where(failed))
        rows = await session.scalars(select(FlowExecution).where(failed).order_by(FlowExecution.created_at.desc(), FlowExecution.id).limit(limit))
        return list(rows), int(total or 0)


def _positions(plans, ancestors: tuple[str, ...] = ()) -> dict[str, tuple[int, str, tuple[str, ...]]]:
    """Each planned step's ``(position, type, ids of the control steps around it)`` by id."""
    found: dict[str, tuple[int, str, tuple[str, ...]]] = {}
    for plan in plans:
        found[plan.id] = (plan.position, plan.type, ancestors)
        for _, block in plan.blocks:
            found.update(_positions(block, (*ancestors, plan.id)))
    return found


async def retry(services: Services, *, workspace_id: str, flow_id: str, execution_id: str, from_step: str | None, version: str) -> FlowExecution:
    """A new (pending) execution of a failed one, with its trigger payload, that runs from
    ``from_step`` (by default the first step that failed) on: the steps before it that completed
    are not run again, their records (and outputs, which later steps read) are copied. ``version``
    ``original`` runs what the failed execution ran; ``current`` the flow's published version (its
    current steps when never published), where a step is reused when one of the same id and type
    had completed. ``Conflict`` unless the execution failed; ``Invalid`` for a ``from_step`` the
    steps do not have."""
    async with services.db.transaction(tenant=workspace_id) as session:
        flow = await get_flow(session, flow_id)
        original = await _execution(session, flow.id, execution_id)
        if original.status != "failed":
            raise Conflict(f"only a failed execution is retried; this one is {original.status}")
        row: dict = {
            "workspace_id": workspace_id,
            "flow_id": flow.id,
            "trigger_source": "retry",
            "trigger_payload": original.trigger_payload,
            "replay_of": original.id,
        }
        if version == "original":
            row["version"], row["steps"] = original.version, original.steps
        elif flow.published_version is not None:
            row["version"] = flow.published_version
        else:
            row["steps"] = flow.steps
        try:
            plans = plan_steps(services.registry, row["steps"]) if row.get("version") is None else await services.flow_runner.plan(flow.id, row["version"])
        except StepFailed as error:
            raise Invalid(str(error)) from None
        where = _positions(plans)
        records = await execution_steps(session, original.id)
        if from_step is None:
            from_step = next((record.step_id for record in records if record.status == "failed"), None)
        if from_step not in where:
            raise Invalid(f"fromStep: the flow has no step {from_step!r}" if from_step else "fromStep: the execution has no failed step; name one")
        start, _, around = where[from_step]
        (created,) = await engine.create_executions(services, session, [row])
        for record in records:
            at = where.get(record.step_id)
            if record.status != "completed" or at is None or at[1] != record.type or at[0] >= start or record.step_id in around:
                continue
            session.add(
                FlowExecutionStep(
                    execution_id=created,
                    position=at[0],
                    step_id=record.step_id,
                    type=record.type,
                    status=record.status,
                    input=record.input,
                    output=record.output,
                    error=record.error,
                    started_at=record.started_at,
                    finished_at=record.finished_at,
                    duration_ms=record.duration_ms,
                )
            )
        await session.flush()
        return await session.get(FlowExecution, created)
