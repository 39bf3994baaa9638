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

from typing import Any

from sqlalchemy import and_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.flows.models import Flow, FlowExecution, FlowExecutionStep, FlowVersion
from patchbay.core.http.errors import bad_request, not_found
from patchbay.core.timeutil import iso, utcnow


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
    """The flow of the session's tenant; 404 otherwise."""
    statement = select(Flow).where(Flow.id == flow_id)
    if lock:
        statement = statement.with_for_update()
    flow = await session.scalar(statement)
    if flow is None:
        raise not_found("Flow not found")
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
        raise not_found("Flow not found")
    flow = await session.scalar(select(Flow).where(Flow.id == flow_id).execution_options(populate_existing=True))
    if flow is None:
        raise not_found("Flow not found")
    return flow


async def publish(session: AsyncSession, flow: Flow, *, action: str = "publish", reverted_from: int | None = None) -> FlowVersion:
    """Snapshot the current steps as the version taken by :func:`claim_next_version` and make the
    flow published."""
    now = utcnow()
    snapshot = FlowVersion(workspace_id=flow.workspace_id, flow_id=flow.id, version=flow.version, steps=list(flow.steps or []),
                           published_at=now, action=action, reverted_from=reverted_from)  # fmt: skip
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
        raise not_found(f"Version {version} of this flow does not exist")
    flow.steps = list(old.steps or [])
    return await publish(session, flow, action="revert", reverted_from=version)


def toggle(flow: Flow) -> None:
    if flow.published_version is None:
        raise bad_request("Only a flow with a published version can be toggled; publish it first")
    flow.is_active = not flow.is_active


def archive(flow: Flow) -> None:
    flow.status = "archived"
    flow.archived_at = utcnow()


async def versions(session: AsyncSession, flow_id: str) -> list[FlowVersion]:
    statement = select(FlowVersion).where(FlowVersion.flow_id == flow_id).order_by(FlowVersion.version.desc())
    return list((await session.scalars(statement)).all())
