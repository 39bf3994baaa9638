"""Flow schedules over HTTP (spec 4.10): ``/connect/v1/flows/{flowId}/schedules``; body
``{cron, timezone?: "UTC", payload?: {}, isActive?: true}``, PATCH takes any of them."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows import schedules
from patchbay.core.flows.api_models import CreateScheduleDto, Done, ScheduleOut, UpdateScheduleDto, read_checked
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


@routes.get("/connect/v1/flows/{flowId}/schedules")
@returns(list[ScheduleOut])
@requires("triggers.view")
async def list_schedules(request: web.Request) -> web.Response:
    """A flow's cron schedules."""
    rows = await schedules.list_schedules(request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=request.match_info["flowId"])
    return reply(request, [schedules.schedule_json(s) for s in rows])


@routes.post("/connect/v1/flows/{flowId}/schedules")
@accepts(CreateScheduleDto)
@returns(ScheduleOut, status=201, description="Created")
@requires("triggers.write")
async def create_schedule(request: web.Request) -> web.Response:
    """Run the flow's published version on a cron expression."""
    body = await read_checked(request, CreateScheduleDto)
    schedule = await schedules.create_schedule(
        request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=request.match_info["flowId"], body=body
    )
    return reply(request, schedules.schedule_json(schedule), status=201)


@routes.patch("/connect/v1/flows/{flowId}/schedules/{scheduleId}")
@accepts(UpdateScheduleDto)
@returns(ScheduleOut)
@requires("triggers.write")
async def update_schedule(request: web.Request) -> web.Response:
    """Change a schedule's cron, timezone, payload or isActive."""
    body = await read_checked(request, UpdateScheduleDto)
    schedule = await schedules.update_schedule(
        request.app[SERVICES],
        workspace_id=principal_of(request).workspace_id,
        flow_id=request.match_info["flowId"],
        schedule_id=request.match_info["scheduleId"],
        body=body,
    )
    return reply(request, schedules.schedule_json(schedule))


@routes.delete("/connect/v1/flows/{flowId}/schedules/{scheduleId}")
@returns(Done)
@requires("triggers.write")
async def delete_schedule(request: web.Request) -> web.Response:
    """Delete a schedule."""
    await schedules.delete_schedule(
        request.app[SERVICES],
        workspace_id=principal_of(request).workspace_id,
        flow_id=request.match_info["flowId"],
        schedule_id=request.match_info["scheduleId"],
    )
    return reply(request, {"success": True})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
