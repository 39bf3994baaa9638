"""Flows over HTTP (spec 4.8): CRUD, publish, versions, revert, toggle, archive, test, and the
trigger and action options a flow editor offers."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from patchbay.core.appkeys import DB, FLOW_RUNNER, JOBS, REGISTRY
from patchbay.core.flows import engine, service
from patchbay.core.flows.api_models import (
    ActionOptions, CreateFlowDto, ExecutionWithSteps, FlowDeleted, FlowOut, FlowPage, FlowVersionOut, FlowVersionWithSteps, Published,
    ProviderTriggers, ToggleDto, TriggerPayload, UpdateFlowDto, read_checked,
)  # fmt: skip
from patchbay.core.flows.models import FLOW_STATUSES, Flow, FlowExecution
from patchbay.core.flows.runner import FlowRunner
from patchbay.core.flows.steps import known_step_types
from patchbay.core.http.bodies import page_envelope, page_params, read_json, structure
from patchbay.core.http.errors import bad_request, conflict, not_found
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso

routes = web.RouteTableDef()


def _steps(request: web.Request, value: Any) -> list[dict[str, Any]]:
    try:
        return engine.validate_steps(request.app, value)
    except engine.InvalidSteps as error:
        raise bad_request(str(error)) from None


def _text(body: dict[str, Any], name: str, *, required: bool = False) -> str | None:
    """``body[name]``; null where it is ``required`` is a 400 (the model checks the rest)."""
    if required and body.get(name) is None:
        raise bad_request(f"{name} is required")
    return body.get(name)


def trigger_options(registry) -> list[dict[str, Any]]:
    options = []
    for provider_name, triggers in sorted(registry.objects("triggers").items()):
        provider = registry.provider(provider_name)
        options.append({
            "providerType": provider_name,
            "displayName": provider.display_name if provider else provider_name,
            "triggers": [
                {"name": t.name, "displayName": t.display_name, "kind": t.kind, "description": t.description,
                 "eventTypes": list(t.event_types), "config": dict(t.config), "sample": dict(t.sample)}
                for t in sorted(triggers.values(), key=lambda t: t.name)
            ],
        })  # fmt: skip
    return options


@routes.get("/connect/v1/flows/trigger-options")
@returns(list[ProviderTriggers])
@requires("flows.view")
async def get_trigger_options(request: web.Request) -> web.Response:
    """Providers and the triggers they offer, for a flow's trigger subscription."""
    return reply(request, trigger_options(request.app[REGISTRY]))


@routes.get("/connect/v1/flows/action-options")
@returns(ActionOptions)
@requires("flows.view")
async def get_action_options(request: web.Request) -> web.Response:
    """Step types and the provider actions an ``action`` step can call."""
    from patchbay.core.actions.service import action_json

    registry = request.app[REGISTRY]
    providers = [
        {"providerType": name, "displayName": registry.provider(name).display_name if registry.provider(name) else name,
         "actions": [action_json(name, a) for a in sorted(actions.values(), key=lambda a: a.name)]}
        for name, actions in sorted(registry.objects("actions").items())
    ]  # fmt: skip
    return reply(request, {"stepTypes": known_step_types(request.app), "providers": providers})


@routes.get("/connect/v1/flows")
@query(**PAGE_QUERY, status={"type": "string", "enum": list(FLOW_STATUSES)})
@returns(FlowPage)
@requires("flows.view")
async def list_flows(request: web.Request) -> web.Response:
    """The workspace's flows, newest first; ``?status=`` filters."""
    page, limit = page_params(request)
    status = request.query.get("status")
    statement = select(Flow)
    if status:
        if status not in FLOW_STATUSES:
            raise bad_request(f"status must be one of {', '.join(FLOW_STATUSES)}")
        statement = statement.where(Flow.status == status)
    async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
        total = await session.scalar(select(func.count()).select_from(statement.subquery()))
        rows = (await session.scalars(statement.order_by(Flow.created_at.desc(), Flow.id).offset((page - 1) * limit).limit(limit))).all()
    return reply(request, page_envelope([service.flow_json(f) for f in rows], page, limit, total or 0))


@routes.post("/connect/v1/flows")
@accepts(CreateFlowDto)
@returns(FlowOut, status=201, description="Created")
@requires("flows.write")
async def create_flow(request: web.Request) -> web.Response:
    """Create a flow (a draft) from ``{name, description?, steps, trigger?}``."""
    body = await read_checked(request, CreateFlowDto)
    name = _text(body, "name", required=True)
    description = _text(body, "description")
    steps = _steps(request, body.get("steps", []))
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        flow = Flow(name=name, description=description, steps=steps, trigger=body.get("trigger"), status="draft", version=0)
        session.add(flow)
    return reply(request, service.flow_json(flow), status=201)


@routes.get("/connect/v1/flows/{flowId}")
@returns(FlowOut)
@requires("flows.view")
async def get_flow(request: web.Request) -> web.Response:
    """One flow."""
    async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
        flow = await service.get_flow(session, request.match_info["flowId"])
    return reply(request, service.flow_json(flow))


@routes.patch("/connect/v1/flows/{flowId}")
@accepts(UpdateFlowDto)
@returns(FlowOut)
@requires("flows.write")
async def update_flow(request: web.Request) -> web.Response:
    """Edit a flow; a published flow becomes a draft and its published version keeps running."""
    body = await read_checked(request, UpdateFlowDto)
    changes: dict[str, Any] = {}
    if "name" in body:
        changes["name"] = _text(body, "name", required=True)
    if "description" in body:
        changes["description"] = _text(body, "description")
    if "steps" in body:
        changes["steps"] = _steps(request, body["steps"])
    if "trigger" in body:
        changes["trigger"] = body["trigger"]
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        flow = await service.get_flow(session, request.match_info["flowId"], lock=True)
        if changes:
            service.edit(flow, changes)
    return reply(request, service.flow_json(flow))


@routes.delete("/connect/v1/flows/{flowId}")
@returns(FlowDeleted)
@requires("flows.write")
async def delete_flow(request: web.Request) -> web.Response:
    """Delete a flow with its versions, executions, triggers and schedules."""
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        flow = await service.get_flow(session, request.match_info["flowId"])
        await session.delete(flow)
    return reply(request, {"success": True, "id": flow.id})


async def _publishing(request: web.Request, change) -> web.Response:
    try:
        async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
            flow = await service.claim_next_version(session, request.match_info["flowId"])
            await change(session, flow)
    except IntegrityError:
        raise conflict("The flow was published concurrently; try again") from None
    return reply(request, {"id": flow.id, "version": flow.version, "status": flow.status, "published_at": iso(flow.published_at)}, status=201)


@routes.post("/connect/v1/flows/{flowId}/publish")
@returns(Published, status=201, description="Published")
@requires("flows.write")
async def publish_flow(request: web.Request) -> web.Response:
    """Publish: snapshot the steps as a new version that live triggers run."""

    async def change(session, flow: Flow) -> None:
        _steps(request, flow.steps)
        await service.publish(session, flow)

    return await _publishing(request, change)


@routes.post("/connect/v1/flows/{flowId}/revert/{version}")
@returns(Published, status=201, description="Published")
@requires("flows.write")
async def revert_flow(request: web.Request) -> web.Response:
    """Restore the steps of a version and publish them as a new version."""
    try:
        version = int(request.match_info["version"])
    except ValueError:
        raise not_found("Version not found") from None

    async def change(session, flow: Flow) -> None:
        await service.revert(session, flow, version)

    return await _publishing(request, change)


@routes.get("/connect/v1/flows/{flowId}/versions")
@query(steps={"type": "boolean", "default": False})
@returns(list[FlowVersionWithSteps | FlowVersionOut])
@requires("flows.view")
async def list_versions(request: web.Request) -> web.Response:
    """The version history, newest first; ``?steps=true`` includes each snapshot."""
    with_steps = request.query.get("steps", "").lower() in ("1", "true", "yes")
    async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
        flow = await service.get_flow(session, request.match_info["flowId"])
        rows = await service.versions(session, flow.id)
    return reply(request, [service.version_json(v, with_steps=with_steps) for v in rows])


@routes.patch("/connect/v1/flows/{flowId}/toggle")
@accepts(ToggleDto, required=False)
@returns(FlowOut)
@requires("flows.write")
async def toggle_flow(request: web.Request) -> web.Response:
    """Pause or resume the live runs of a published flow (its triggers and schedules)."""
    body = structure(await read_json(request), ToggleDto) if (await request.read()).strip() else ToggleDto()
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        flow = await service.get_flow(session, request.match_info["flowId"], lock=True)
        if body.isActive is not None:
            if flow.published_version is None:
                service.toggle(flow)  # refuses with the reason
            flow.is_active = body.isActive
        else:
            service.toggle(flow)
    return reply(request, service.flow_json(flow))


@routes.post("/connect/v1/flows/{flowId}/archive")
@returns(FlowOut, status=201, description="Archived")
@requires("flows.write")
async def archive_flow(request: web.Request) -> web.Response:
    """Archive (retire) a flow: it no longer runs; publish or revert brings it back."""
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        flow = await service.get_flow(session, request.match_info["flowId"], lock=True)
        service.archive(flow)
    return reply(request, service.flow_json(flow), status=201)


@routes.post("/connect/v1/flows/{flowId}/test")
@accepts(TriggerPayload, required=False)
@returns(ExecutionWithSteps, status=201, description="The execution with its steps")
@requires("flows.write")
async def test_flow(request: web.Request) -> web.Response:
    """Run the current steps now with the body as the trigger payload; no alerts are sent."""
    raw = await request.read()
    payload: Any = {}
    if raw.strip():
        payload = await read_json(request)
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].session(tenant=workspace_id) as session:
        flow = await service.get_flow(session, request.match_info["flowId"])
    steps = _steps(request, flow.steps)
    execution_id = await engine.run_test(request.app, workspace_id=workspace_id, flow_id=flow.id, steps=steps, payload=payload)
    async with request.app[DB].session(tenant=workspace_id) as session:
        execution = await session.get(FlowExecution, execution_id)
        steps_rows = await service.execution_steps(session, execution_id)
    return reply(request, {**service.execution_json(execution), "steps": [service.step_json(s) for s in steps_rows]}, status=201)


def setup(app: web.Application) -> None:
    app[FLOW_RUNNER] = FlowRunner(app)
    app.router.add_routes(routes)
    app[JOBS].register(engine.JOB_KIND, engine.execute_job, max_attempts=10, backoff_base=1.0, backoff_cap=60.0)
