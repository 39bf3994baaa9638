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
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from sqlalchemy import select, update

from patchbay.core.appkeys import DB
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.models import Flow, FlowSchedule
from patchbay.core.flows.service import is_live
from patchbay.core.timeutil import iso, utcnow

BATCH = 500


class InvalidSchedule(ValueError):
    pass


def check_cron(expression: Any) -> str:
    if not isinstance(expression, str) or len(expression.split()) != 5 or not croniter.is_valid(expression):
        raise InvalidSchedule("cron must be a standard five-field cron expression, e.g. '*/5 * * * *'")
    return " ".join(expression.split())


def check_timezone(name: Any) -> str:
    if not isinstance(name, str):
        raise InvalidSchedule("timezone must be an IANA timezone name such as 'Europe/Paris'")
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidSchedule(f"timezone {name!r} is not a known IANA timezone") from None
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


async def run_schedules(app: Any, now: datetime | None = None) -> dict[str, Any]:
    """The ``run-schedules`` periodic job."""
    now = now or utcnow()
    async with app[DB].session() as session:
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
        async with app[DB].transaction() as session:
            claimed = await session.execute(
                update(FlowSchedule)
                .where(FlowSchedule.id == schedule.id, FlowSchedule.next_run_at == tick)
                .values(next_run_at=next_run(schedule.cron, schedule.timezone, max(now, tick)), last_run_at=tick if live else schedule.last_run_at)
                .execution_options(synchronize_session=False)
            )
            if claimed.rowcount != 1 or not live:
                continue
            row = {"workspace_id": schedule.workspace_id, "flow_id": schedule.flow_id, "version": version, "trigger_source": "schedule",
                   "trigger_payload": {**(schedule.payload or {}), "scheduledAt": iso(tick)},
                   "subscription_id": schedule.id, "dedupe_key": f"schedule:{schedule.id}:{iso(tick)}"}  # fmt: skip
            fired += len(await create_executions(app, session, [row]))
    return {"due": len(due), "fired": fired}
