"""Cron schedules (spec 2.8): a flow runs on a standard five-field cron expression (croniter) in a
timezone (IANA name, default UTC).

The ``run-schedules`` periodic job fires every due schedule of a live flow once per tick, even when
several processes run the job at the same moment: the tick is claimed by a conditional update of the
schedule's ``next_run_at`` and the execution carries the unique key ``schedule:<id>:<tick>``. Ticks
missed while nothing ran (or while the flow was paused) are not caught up one by one: a schedule fires
at most once per job run and moves on to its next future tick.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from sqlalchemy import select, update

from patchbay.core.errors import Invalid, NotFound
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.models import Flow, FlowSchedule
from patchbay.core.flows.service import get_flow, is_live
from patchbay.core.timeutil import iso, utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services

BATCH = 500
#: seconds between two runs of the ``run-schedules`` periodic job
RUN_INTERVAL_SECONDS = 15


def check_cron(expression: Any) -> str:
    if not isinstance(expression, str) or len(expression.split()) != 5 or not croniter.is_valid(expression):
        raise Invalid("cron must be a standard five-field cron expression, e.g. '*/5 * * * *'")
    return " ".join(expression.split())


def check_timezone(name: Any) -> str:
    if not isinstance(name, str):
        raise Invalid("timezone must be an IANA timezone name such as 'Europe/Paris'")
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise Invalid(f"timezone {name!r} is not a known IANA timezone") from None
    return name


def next_run(expression: str, timezone: str, after: datetime) -> datetime:
    """The first tick strictly after ``after`` (UTC in, UTC out), evaluated in ``timezone``."""
    local = after.astimezone(ZoneInfo(timezone))
    return croniter(expression, local).get_next(datetime).astimezone(UTC)


def schedule_json(schedule: FlowSchedule) -> dict[str, Any]:
    return {
        "id": schedule.id,
        "flowId": schedule.flow_id,
        "cron": schedule.cron,
        "timezone": schedule.timezone,
        "payload": schedule.payload,
        "isActive": schedule.is_active,
        "nextRunAt": iso(schedule.next_run_at),
        "lastRunAt": iso(schedule.last_run_at),
        "createdAt": iso(schedule.created_at),
        "updatedAt": iso(schedule.updated_at),
    }


async def run_schedules(services: Services, now: datetime | None = None) -> dict[str, Any]:
    """The ``run-schedules`` periodic job."""
    now = now or utcnow()
    async with services.db.session() as session:
        due = (
            await session.execute(
                select(FlowSchedule, Flow.published_version, is_live())
                .join(Flow, Flow.id == FlowSchedule.flow_id)
                .where(FlowSchedule.is_active.is_(True), FlowSchedule.next_run_at <= now)
                .order_by(FlowSchedule.next_run_at)
                .limit(BATCH)
            )
        ).all()
    fired = 0
    for schedule, version, live in due:
        tick = schedule.next_run_at
        async with services.db.transaction() as session:
            claimed = await session.execute(
                update(FlowSchedule)
                .where(FlowSchedule.id == schedule.id, FlowSchedule.next_run_at == tick)
                .values(next_run_at=next_run(schedule.cron, schedule.timezone, max(now, tick)), last_run_at=tick if live else schedule.last_run_at)
                .execution_options(synchronize_session=False)
            )
            if claimed.rowcount != 1 or not live:
                continue
            row = {
                "workspace_id": schedule.workspace_id,
                "flow_id": schedule.flow_id,
                "version": version,
                "trigger_source": "schedule",
                "trigger_payload": {**(schedule.payload or {}), "scheduledAt": iso(tick)},
                "subscription_id": schedule.id,
                "dedupe_key": f"schedule:{schedule.id}:{iso(tick)}",
            }
            fired += len(await create_executions(services, session, [row]))
    return {"due": len(due), "fired": fired}


# ---------------------------------------------------------------------------------------------
# A flow's schedules (spec 4.10)
# ---------------------------------------------------------------------------------------------


def _apply(schedule: FlowSchedule, body: dict[str, Any]) -> None:
    """Set the fields ``body`` names (a new schedule's others to their defaults) and the next run."""
    if "cron" in body or schedule.cron is None:
        schedule.cron = check_cron(body.get("cron"))
    if "timezone" in body or schedule.timezone is None:
        schedule.timezone = check_timezone(body.get("timezone") or "UTC")
    if "payload" in body or schedule.payload is None:
        payload = body.get("payload") or {}
        if not isinstance(payload, dict):
            raise Invalid("payload must be an object")
        schedule.payload = payload
    if "isActive" in body or schedule.is_active is None:
        active = body.get("isActive", True)
        if not isinstance(active, bool):
            raise Invalid("isActive must be a boolean")
        schedule.is_active = active
    schedule.next_run_at = next_run(schedule.cron, schedule.timezone, utcnow()) if schedule.is_active else None


async def _schedule(session: Any, flow_id: str, schedule_id: str) -> FlowSchedule:
    schedule = await session.scalar(select(FlowSchedule).where(FlowSchedule.id == schedule_id, FlowSchedule.flow_id == flow_id))
    if schedule is None:
        raise NotFound("Schedule not found")
    return schedule


async def list_schedules(services: Services, *, workspace_id: str, flow_id: str) -> list[FlowSchedule]:
    """The flow's schedules, oldest first; ``NotFound`` without the flow."""
    async with services.db.session(tenant=workspace_id) as session:
        flow = await get_flow(session, flow_id)
        return list((await session.scalars(select(FlowSchedule).where(FlowSchedule.flow_id == flow.id).order_by(FlowSchedule.created_at))).all())


async def create_schedule(services: Services, *, workspace_id: str, flow_id: str, body: dict[str, Any]) -> FlowSchedule:
    """A schedule of the flow from ``{cron, timezone?: "UTC", payload?: {}, isActive?: true}``."""
    async with services.db.transaction(tenant=workspace_id) as session:
        flow = await get_flow(session, flow_id)
        schedule = FlowSchedule(flow_id=flow.id, cron=None, timezone=None, payload=None, is_active=None)
        _apply(schedule, body)
        session.add(schedule)
    return schedule


async def update_schedule(services: Services, *, workspace_id: str, flow_id: str, schedule_id: str, body: dict[str, Any]) -> FlowSchedule:
    """Change any of the schedule's cron, timezone, payload or isActive."""
    async with services.db.transaction(tenant=workspace_id) as session:
        schedule = await _schedule(session, flow_id, schedule_id)
        _apply(schedule, body)
    return schedule


async def delete_schedule(services: Services, *, workspace_id: str, flow_id: str, schedule_id: str) -> None:
    async with services.db.transaction(tenant=workspace_id) as session:
        await session.delete(await _schedule(session, flow_id, schedule_id))
