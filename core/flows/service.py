"""The flow lifecycle (spec 3.1) and the JSON shapes of flows, versions and executions.

- create: a draft; update: any edit of a published (or archived) flow makes it a draft again, while
  its published version keeps running;
- publish and revert: each creates the next integer version holding a snapshot of the steps (kept
  forever) and makes the flow published; revert first restores that version's steps;
- toggle: pauses and resumes the live runs (triggers and schedules) of a flow that has a published
  version; it never changes the status or the version;
- archive: retires the flow (no live runs); publish or revert makes it published again;
- live runs use ``published_version`` only, and only when the flow is not archived and is active.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.errors import Conflict, Invalid, NotFound
from patchbay.core.flows import engine
from patchbay.core.flows.checks import Problem, describe, problems_of
from patchbay.core.flows.models import FLOW_STATUSES, Flow, FlowExecution, FlowExecutionStep, FlowVersion
from patchbay.core.timeutil import iso, utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services


def is_live():
    """SQL condition: the flow's published version runs on triggers and schedules."""
    return and_(Flow.published_version.is_not(None), Flow.status != "archived", Flow.is_active.is_(True))


def flow_json(flow: Flow) -> dict[str, Any]:
    return {
        "id": flow.id,
        "name": flow.name,
        "description": flow.description,
        "status": flow.status,
        "version": flow.version,
        "publishedVersion": flow.published_version,
        "published_at": iso(flow.published_at),
        "isActive": flow.is_active,
        "trigger": flow.trigger,
        "steps": flow.steps,
        "templateSlug": flow.template_slug,
        "archivedAt": iso(flow.archived_at),
        "createdAt": iso(flow.created_at),
        "updatedAt": iso(flow.updated_at),
    }


def version_json(version: FlowVersion, *, with_steps: bool = False) -> dict[str, Any]:
    body = {"version": version.version, "published_at": iso(version.published_at), "action": version.action, "revertedFrom": version.reverted_from}
    if with_steps:
        body["steps"] = version.steps
    return body


def execution_json(execution: FlowExecution) -> dict[str, Any]:
    return {
        "id": execution.id,
        "flowId": execution.flow_id,
        "version": execution.version,
        "status": execution.status,
        "triggerSource": execution.trigger_source,
        "triggerPayload": execution.trigger_payload,
        "error": execution.error,
        "startedAt": iso(execution.started_at),
        "finishedAt": iso(execution.finished_at),
        "durationMs": execution.duration_ms,
        "replayOf": execution.replay_of,
        "createdAt": iso(execution.created_at),
        "resumeAt": iso(execution.resume_at),
    }


def step_json(step: FlowExecutionStep) -> dict[str, Any]:
    return {
        "id": step.id,
        "stepId": step.step_id,
        "position": step.position,
        "type": step.type,
        "status": step.status,
        "input": step.input,
        "output": step.output,
        "error": step.error,
        "startedAt": iso(step.started_at),
        "finishedAt": iso(step.finished_at),
        "durationMs": step.duration_ms,
    }


async def get_flow(session: AsyncSession, flow_id: str, *, lock: bool = False) -> Flow:
    """The flow of the session's tenant; ``NotFound`` otherwise."""
    statement = select(Flow).where(Flow.id == flow_id)
    if lock:
        statement = statement.with_for_update()
    flow = await session.scalar(statement)
    if flow is None:
        raise NotFound("Flow not found")
    return flow


async def execution_steps(session: AsyncSession, execution_id: str) -> list[FlowExecutionStep]:
    statement = select(FlowExecutionStep).where(FlowExecutionStep.execution_id == execution_id).order_by(FlowExecutionStep.position)
    return list((await session.scalars(statement)).all())


def edit(flow: Flow, changes: dict[str, Any]) -> None:
    """Apply an edit; a published or archived flow becomes a draft (its published version stays)."""
    for field in ("name", "description", "steps", "trigger"):
        if field in changes:
            setattr(flow, field, changes[field])
    if flow.status != "draft":
        flow.status = "draft"
        flow.archived_at = None


async def claim_next_version(session: AsyncSession, flow_id: str) -> Flow:
    """Start a publish or revert: take the next version number with one UPDATE (the transaction's
    first statement, so concurrent publishes of one flow queue up on SQLite as on PostgreSQL) and
    answer the flow as it is now."""
    claimed = await session.execute(
        update(Flow).where(Flow.id == flow_id).values(version=Flow.version + 1, updated_at=utcnow()).execution_options(synchronize_session=False)
    )
    if claimed.rowcount != 1:
        raise NotFound("Flow not found")
    flow = await session.scalar(select(Flow).where(Flow.id == flow_id).execution_options(populate_existing=True))
    if flow is None:
        raise NotFound("Flow not found")
    return flow


async def publish(session: AsyncSession, flow: Flow, *, action: str = "publish", reverted_from: int | None = None) -> FlowVersion:
    """Snapshot the current steps as the version taken by :func:`claim_next_version` and make the
    flow published."""
    now = utcnow()
    snapshot = FlowVersion(
        workspace_id=flow.workspace_id,
        flow_id=flow.id,
        version=flow.version,
        steps=list(flow.steps or []),
        published_at=now,
        action=action,
        reverted_from=reverted_from,
    )
    session.add(snapshot)
    flow.status = "published"
    flow.published_version = flow.version
    flow.published_at = now
    flow.archived_at = None
    return snapshot


async def revert(session: AsyncSession, flow: Flow, version: int) -> FlowVersion:
    """Restore the steps of ``version`` and publish them as a new version."""
    old = await session.scalar(select(FlowVersion).where(FlowVersion.flow_id == flow.id, FlowVersion.version == version))
    if old is None:
        raise NotFound(f"Version {version} of this flow does not exist")
    flow.steps = list(old.steps or [])
    return await publish(session, flow, action="revert", reverted_from=version)


def toggle(flow: Flow) -> None:
    if flow.published_version is None:
        raise Invalid("Only a flow with a published version can be toggled; publish it first")
    flow.is_active = not flow.is_active


def archive(flow: Flow) -> None:
    flow.status = "archived"
    flow.archived_at = utcnow()


async def versions(session: AsyncSession, flow_id: str) -> list[FlowVersion]:
    statement = select(FlowVersion).where(FlowVersion.flow_id == flow_id).order_by(FlowVersion.version.desc())
    return list((await session.scalars(statement)).all())


# ---------------------------------------------------------------------------------------------
# The flows of a workspace (spec 4.8)
# ---------------------------------------------------------------------------------------------


def _text(body: dict[str, Any], name: str, *, required: bool = False, maximum: int = 200) -> str | None:
    value = body.get(name)
    if value is None:
        if required:
            raise Invalid(f"{name} is required")
        return None
    if not isinstance(value, str) or (required and not value.strip()) or len(value) > maximum:
        raise Invalid(f"{name} must be a string of at most {maximum} characters")
    return value


def _trigger(value: Any) -> dict[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise Invalid("trigger must be an object")
    return value


async def flow_page(services: Services, *, workspace_id: str, status: str | None, page: int, limit: int) -> tuple[list[Flow], int]:
    """A page of the workspace's flows (of ``status`` when given), newest first, and how many match."""
    statement = select(Flow)
    if status:
        if status not in FLOW_STATUSES:
            raise Invalid(f"status must be one of {', '.join(FLOW_STATUSES)}")
        statement = statement.where(Flow.status == status)
    async with services.db.session(tenant=workspace_id) as session:
        total = await session.scalar(select(func.count()).select_from(statement.subquery()))
        rows = (await session.scalars(statement.order_by(Flow.created_at.desc(), Flow.id).offset((page - 1) * limit).limit(limit))).all()
    return list(rows), int(total or 0)


async def create_flow(services: Services, *, workspace_id: str, body: dict[str, Any]) -> tuple[Flow, list[Problem]]:
    """A draft flow from ``{name, description?, steps, trigger?}``; ``Invalid`` names the field.
    Answers the flow and its problems (``checks``): a flow with problems is saved, as a draft."""
    name = _text(body, "name", required=True)
    description = _text(body, "description", maximum=5000)
    steps = engine.validate_steps(services.registry, body.get("steps", []))
    flow = Flow(name=name, description=description, steps=steps, trigger=_trigger(body.get("trigger")), status="draft", version=0)
    async with services.db.transaction(tenant=workspace_id) as session:
        session.add(flow)
        problems = await problems_of(services, session, flow_id=None, steps=steps)
    return flow, problems


async def load_flow(services: Services, *, workspace_id: str, flow_id: str) -> Flow:
    async with services.db.session(tenant=workspace_id) as session:
        return await get_flow(session, flow_id)


async def checked_flow(services: Services, *, workspace_id: str, flow_id: str) -> tuple[Flow, list[Problem]]:
    """The flow and the problems of its current steps."""
    async with services.db.session(tenant=workspace_id) as session:
        flow = await get_flow(session, flow_id)
        return flow, await problems_of(services, session, flow_id=flow.id, steps=flow.steps or [])


async def update_flow(services: Services, *, workspace_id: str, flow_id: str, body: dict[str, Any]) -> tuple[Flow, list[Problem]]:
    """Apply the fields ``body`` names (see :func:`edit`); answers the flow and the problems of its
    steps, with which it is saved."""
    changes: dict[str, Any] = {}
    if "name" in body:
        changes["name"] = _text(body, "name", required=True)
    if "description" in body:
        changes["description"] = _text(body, "description", maximum=5000)
    if "steps" in body:
        changes["steps"] = engine.validate_steps(services.registry, body["steps"])
    if "trigger" in body:
        changes["trigger"] = _trigger(body["trigger"])
    async with services.db.transaction(tenant=workspace_id) as session:
        flow = await get_flow(session, flow_id, lock=True)
        if changes:
            edit(flow, changes)
        problems = await problems_of(services, session, flow_id=flow.id, steps=flow.steps or [])
    return flow, problems


async def delete_flow(services: Services, *, workspace_id: str, flow_id: str) -> None:
    """Delete a flow with its versions, executions, triggers and schedules."""
    async with services.db.transaction(tenant=workspace_id) as session:
        await session.delete(await get_flow(session, flow_id))


async def _publishing(services: Services, workspace_id: str, flow_id: str, change: Callable[[AsyncSession, Flow], Awaitable[Any]]) -> Flow:
    try:
        async with services.db.transaction(tenant=workspace_id) as session:
            flow = await claim_next_version(session, flow_id)
            await change(session, flow)
    except IntegrityError:
        raise Conflict("The flow was published concurrently; try again") from None
    return flow


async def publish_flow(services: Services, *, workspace_id: str, flow_id: str) -> Flow:
    """Publish: snapshot the steps as a new version that live triggers run; ``Invalid`` listing
    every problem (``checks``) of steps that are not fit to run."""

    async def change(session: AsyncSession, flow: Flow) -> None:
        engine.validate_steps(services.registry, flow.steps)
        problems = await problems_of(services, session, flow_id=flow.id, steps=flow.steps or [])
        if problems:
            raise Invalid(describe(problems))
        await publish(session, flow)

    return await _publishing(services, workspace_id, flow_id, change)


async def revert_flow(services: Services, *, workspace_id: str, flow_id: str, version: int) -> Flow:
    """Restore the steps of ``version`` and publish them as a new version."""
    return await _publishing(services, workspace_id, flow_id, lambda session, flow: revert(session, flow, version))


async def flow_versions(services: Services, *, workspace_id: str, flow_id: str) -> list[FlowVersion]:
    async with services.db.session(tenant=workspace_id) as session:
        return await versions(session, (await get_flow(session, flow_id)).id)


async def toggle_flow(services: Services, *, workspace_id: str, flow_id: str, active: bool | None) -> Flow:
    """Set (``active``) or flip the live runs of a flow with a published version."""
    async with services.db.transaction(tenant=workspace_id) as session:
        flow = await get_flow(session, flow_id, lock=True)
        if active is not None:
            if flow.published_version is None:
                toggle(flow)  # refuses with the reason
            flow.is_active = active
        else:
            toggle(flow)
    return flow


async def archive_flow(services: Services, *, workspace_id: str, flow_id: str) -> Flow:
    async with services.db.transaction(tenant=workspace_id) as session:
        flow = await get_flow(session, flow_id, lock=True)
        archive(flow)
    return flow


async def run_flow_now(services: Services, *, workspace_id: str, flow_id: str, payload: Any) -> tuple[FlowExecution, list[FlowExecutionStep]]:
    """Run the flow's current steps now with ``payload`` as the trigger (no alerts); answers the
    execution and its steps."""
    flow = await load_flow(services, workspace_id=workspace_id, flow_id=flow_id)
    steps = engine.validate_steps(services.registry, flow.steps)
    execution_id = await engine.run_test(services, workspace_id=workspace_id, flow_id=flow.id, steps=steps, payload=payload)
    async with services.db.session(tenant=workspace_id) as session:
        return await session.get(FlowExecution, execution_id), await execution_steps(session, execution_id)


async def invoke_flow(services: Services, *, workspace_id: str, flow_id: str, payload: Any) -> tuple[FlowExecution, dict[str, Any] | None]:
    """Run the published version of a live flow now with ``payload`` as the trigger (source
    ``invoke``); answers the execution and the answer of its first ``respond`` step (None when no
    ``respond`` step ran)."""
    execution_id, _, reply = await engine.run_published(services, workspace_id=workspace_id, flow_id=flow_id, payload=payload, source="invoke")
    async with services.db.session(tenant=workspace_id) as session:
        return await session.get(FlowExecution, execution_id), reply.get("response")
