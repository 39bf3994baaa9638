"""Flow schedules over HTTP (spec 4.10): ``/connect/v1/flows/{flowId}/schedules``; body
``{cron, timezone?: "UTC", payload?: {}, isActive?: true}``, PATCH takes any of them."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from sqlalchemy import select

from patchbay.core.appkeys import CRON, DB
from patchbay.core.flows import service
from patchbay.core.flows.api_models import CreateScheduleDto, Done, ScheduleOut, UpdateScheduleDto, read_checked
from patchbay.core.flows.models import FlowSchedule
from patchbay.core.flows.schedules import InvalidSchedule, check_cron, check_timezone, next_run, run_schedules, schedule_json
from patchbay.core.http.errors import bad_request, not_found
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.jobs.cron import CronJob
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import utcnow

routes = web.RouteTableDef()

RUN_INTERVAL_SECONDS = 15


def _apply(schedule: FlowSchedule, body: dict[str, Any]) -> None:
    try:
        if "cron" in body or schedule.cron is None:
            schedule.cron = check_cron(body.get("cron"))
        if "timezone" in body or schedule.timezone is None:
            schedule.timezone = check_timezone(body.get("timezone") or "UTC")
    except InvalidSchedule as error:
        raise bad_request(str(error)) from None
    if "payload" in body or schedule.payload is None:
        schedule.payload = body.get("payload") or {}
    if "isActive" in body or schedule.is_active is None:
        active = body.get("isActive", True)
        if not isinstance(active, bool):
            raise bad_request("isActive must be a boolean")
        schedule.is_active = active
    schedule.next_run_at = next_run(schedule.cron, schedule.timezone, utcnow()) if schedule.is_active else None


@routes.get("/connect/v1/flows/{flowId}/schedules")
@returns(list[ScheduleOut])
@requires("triggers.view")
async def list_schedules(request: web.Request) -> web.Response:
    """A flow's cron schedules."""
    async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
        flow = await service.get_flow(session, request.match_info["flowId"])
        rows = (await session.scalars(select(FlowSchedule).where(FlowSchedule.flow_id == flow.id).order_by(FlowSchedule.created_at))).all()
    return reply(request, [schedule_json(s) for s in rows])


@routes.post("/connect/v1/flows/{flowId}/schedules")
@accepts(CreateScheduleDto)
@returns(ScheduleOut, status=201, description="Created")
@requires("triggers.write")
async def create_schedule(request: web.Request) -> web.Response:
    """Run the flow's published version on a cron expression."""
    body = await read_checked(request, CreateScheduleDto)
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        flow = await service.get_flow(session, request.match_info["flowId"])
        schedule = FlowSchedule(flow_id=flow.id, cron=None, timezone=None, payload=None, is_active=None)
        _apply(schedule, body)
        session.add(schedule)
    return reply(request, schedule_json(schedule), status=201)


async def _load(session, request: web.Request) -> FlowSchedule:
    schedule = await session.scalar(
        select(FlowSchedule).where(FlowSchedule.id == request.match_info["scheduleId"], FlowSchedule.flow_id == request.match_info["flowId"])
    )
    if schedule is None:
        raise not_found("Schedule not found")
    return schedule


@routes.patch("/connect/v1/flows/{flowId}/schedules/{scheduleId}")
@accepts(UpdateScheduleDto)
@returns(ScheduleOut)
@requires("triggers.write")
async def update_schedule(request: web.Request) -> web.Response:
    """Change a schedule's cron, timezone, payload or isActive."""
    body = await read_checked(request, UpdateScheduleDto)
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        schedule = await _load(session, request)
        _apply(schedule, body)
    return reply(request, schedule_json(schedule))


@routes.delete("/connect/v1/flows/{flowId}/schedules/{scheduleId}")
@returns(Done)
@requires("triggers.write")
async def delete_schedule(request: web.Request) -> web.Response:
    """Delete a schedule."""
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        await session.delete(await _load(session, request))
    return reply(request, {"success": True})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
    app[CRON].add(CronJob("run-schedules", RUN_INTERVAL_SECONDS, run_schedules))
