"""Flows over HTTP (spec 4.8): CRUD, publish, versions, revert, toggle, archive, test, and the
trigger and action options a flow editor offers."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows import service, workspace_settings
from patchbay.core.flows.api_models import (
    ActionOptions,
    CheckedFlow,
    CreateFlowDto,
    ExecutionWithSteps,
    FlowDeleted,
    FlowOut,
    FlowPage,
    FlowSettingsDto,
    FlowSettingsOut,
    FlowVersionOut,
    FlowVersionWithSteps,
    InvokeOut,
    ProviderTriggers,
    Published,
    StepTypeOut,
    ToggleDto,
    TriggerPayload,
    UpdateFlowDto,
    read_checked,
)
from patchbay.core.flows.checks import Problem
from patchbay.core.flows.models import FLOW_STATUSES, Flow
from patchbay.core.flows.step_types import step_types
from patchbay.core.flows.steps import known_step_types
from patchbay.core.flows.triggers import WEBHOOK_FILTER_SCHEMA, WEBHOOK_RECEIVED
from patchbay.core.http.bodies import page_envelope, page_params, read_json, structure
from patchbay.core.http.errors import not_found
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import Media, reply, returns
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso

routes = web.RouteTableDef()


def trigger_options(registry) -> list[dict[str, Any]]:
    """Each provider's registered triggers; a provider whose inbound webhooks are verified also
    offers ``webhook.received`` (any of its event names is a trigger too)."""
    options = []
    registered = registry.objects("triggers")
    verified = registry.objects("webhooks")
    for provider_name in sorted({*registered, *verified}):
        provider = registry.provider(provider_name)
        listed = [
            {
                "name": t.name,
                "displayName": t.display_name,
                "kind": t.kind,
                "description": t.description,
                "eventTypes": list(t.event_types),
                "config": dict(t.config),
                "sample": dict(t.sample),
            }
            for t in sorted(registered.get(provider_name, {}).values(), key=lambda t: t.name)
        ]
        if provider_name in verified and not any(t["name"] == WEBHOOK_RECEIVED for t in listed):
            listed.append(webhook_received_option(provider.display_name if provider else provider_name))
        options.append({"providerType": provider_name, "displayName": provider.display_name if provider else provider_name, "triggers": listed})
    return options


def webhook_received_option(display_name: str) -> dict[str, Any]:
    return {
        "name": WEBHOOK_RECEIVED,
        "displayName": "Webhook received",
        "kind": "webhook",
        "description": f"Any verified event from {display_name}, filtered by config.eventTypes and config.match; "
        "an event name of the provider (such as customer.created) is also a trigger name",
        "eventTypes": ["*"],
        "config": WEBHOOK_FILTER_SCHEMA,
        "sample": {},
    }


@routes.get("/connect/v1/flows/trigger-options")
@returns(list[ProviderTriggers])
@requires("flows.view")
async def get_trigger_options(request: web.Request) -> web.Response:
    """Providers and the triggers they offer, for a flow's trigger subscription."""
    return reply(request, trigger_options(request.app[SERVICES].registry))


@routes.get("/connect/v1/flows/action-options")
@returns(ActionOptions)
@requires("flows.view")
async def get_action_options(request: web.Request) -> web.Response:
    """Step types and the provider actions an ``action`` step can call."""
    from patchbay.core.actions.service import action_json

    registry = request.app[SERVICES].registry
    providers = [
        {
            "providerType": name,
            "displayName": registry.provider(name).display_name if registry.provider(name) else name,
            "actions": [action_json(name, a) for a in sorted(actions.values(), key=lambda a: a.name)],
        }
        for name, actions in sorted(registry.objects("actions").items())
    ]
    return reply(request, {"stepTypes": known_step_types(registry), "providers": providers})


@routes.get("/connect/v1/flows/step-types")
@returns(list[StepTypeOut])
@requires("flows.view")
async def get_step_types(request: web.Request) -> web.Response:
    """Every step type a flow may use (built in and from plugins) with the JSON Schema of its
    configuration, from which a flow editor builds its forms."""
    return reply(request, step_types(request.app[SERVICES].registry))


@routes.get("/connect/v1/flows/settings")
@returns(FlowSettingsOut)
@requires("flows.view")
async def get_flow_settings(request: web.Request) -> web.Response:
    """The workspace's flow settings: its error flow and its limit of executions run at once."""
    settings = await workspace_settings.flow_settings(request.app[SERVICES], principal_of(request).workspace_id)
    return reply(request, settings.json())


@routes.put("/connect/v1/flows/settings")
@accepts(FlowSettingsDto)
@returns(FlowSettingsOut)
@requires("flows.write")
async def put_flow_settings(request: web.Request) -> web.Response:
    """Set the workspace's error flow (a flow of the workspace, started by every failed execution
    once published) and its limit of executions run at once (the others wait ``pending``)."""
    body = await read_checked(request, FlowSettingsDto)
    workspace_settings.forget(request.app[SERVICES], principal_of(request).workspace_id)
    settings = await workspace_settings.update_flow_settings(request.app[SERVICES], workspace_id=principal_of(request).workspace_id, values=body)
    return reply(request, settings.json())


@routes.get("/connect/v1/flows")
@query(**PAGE_QUERY, status={"type": "string", "enum": list(FLOW_STATUSES)})
@returns(FlowPage)
@requires("flows.view")
async def list_flows(request: web.Request) -> web.Response:
    """The workspace's flows, newest first; ``?status=`` filters."""
    page, limit = page_params(request)
    rows, total = await service.flow_page(
        request.app[SERVICES], workspace_id=principal_of(request).workspace_id, status=request.query.get("status"), page=page, limit=limit
    )
    return reply(request, page_envelope([service.flow_json(f) for f in rows], page, limit, total))


def _checked(flow: Flow, problems: list[Problem]) -> dict[str, Any]:
    return {**service.flow_json(flow), "problems": [problem.json() for problem in problems]}


@routes.post("/connect/v1/flows")
@accepts(CreateFlowDto)
@returns(CheckedFlow, status=201, description="Created")
@requires("flows.write")
async def create_flow(request: web.Request) -> web.Response:
    """Create a flow (a draft) from ``{name, description?, steps, trigger?}``; steps with problems
    are saved, and listed in ``problems``."""
    body = await read_checked(request, CreateFlowDto)
    flow, problems = await service.create_flow(request.app[SERVICES], workspace_id=principal_of(request).workspace_id, body=body)
    return reply(request, _checked(flow, problems), status=201)


@routes.get("/connect/v1/flows/{flowId}")
@returns(CheckedFlow)
@requires("flows.view")
async def get_flow(request: web.Request) -> web.Response:
    """One flow, with the problems of its current steps."""
    flow, problems = await service.checked_flow(request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=request.match_info["flowId"])
    return reply(request, _checked(flow, problems))


@routes.patch("/connect/v1/flows/{flowId}")
@accepts(UpdateFlowDto)
@returns(CheckedFlow)
@requires("flows.write")
async def update_flow(request: web.Request) -> web.Response:
    """Edit a flow; a published flow becomes a draft and its published version keeps running.
    Steps with problems are saved, and listed in ``problems``."""
    body = await read_checked(request, UpdateFlowDto)
    flow, problems = await service.update_flow(
        request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=request.match_info["flowId"], body=body
    )
    return reply(request, _checked(flow, problems))


@routes.delete("/connect/v1/flows/{flowId}")
@returns(FlowDeleted)
@requires("flows.write")
async def delete_flow(request: web.Request) -> web.Response:
    """Delete a flow with its versions, executions, triggers and schedules."""
    flow_id = request.match_info["flowId"]
    await service.delete_flow(request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=flow_id)
    return reply(request, {"success": True, "id": flow_id})


def _published(request: web.Request, flow: Flow) -> web.Response:
    return reply(request, {"id": flow.id, "version": flow.version, "status": flow.status, "published_at": iso(flow.published_at)}, status=201)


@routes.post("/connect/v1/flows/{flowId}/publish")
@returns(Published, status=201, description="Published")
@requires("flows.write")
async def publish_flow(request: web.Request) -> web.Response:
    """Publish: snapshot the steps as a new version that live triggers run. A flow whose steps have
    problems is refused with 400 listing each (step id, field, reason)."""
    flow = await service.publish_flow(request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=request.match_info["flowId"])
    return _published(request, flow)


@routes.post("/connect/v1/flows/{flowId}/revert/{version}")
@returns(Published, status=201, description="Published")
@requires("flows.write")
async def revert_flow(request: web.Request) -> web.Response:
    """Restore the steps of a version and publish them as a new version."""
    try:
        version = int(request.match_info["version"])
    except ValueError:
        raise not_found("Version not found") from None
    flow = await service.revert_flow(
        request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=request.match_info["flowId"], version=version
    )
    return _published(request, flow)


@routes.get("/connect/v1/flows/{flowId}/versions")
@query(steps={"type": "boolean", "default": False})
@returns(list[FlowVersionWithSteps | FlowVersionOut])
@requires("flows.view")
async def list_versions(request: web.Request) -> web.Response:
    """The version history, newest first; ``?steps=true`` includes each snapshot."""
    with_steps = request.query.get("steps", "").lower() in ("1", "true", "yes")
    rows = await service.flow_versions(request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=request.match_info["flowId"])
    return reply(request, [service.version_json(v, with_steps=with_steps) for v in rows])


@routes.patch("/connect/v1/flows/{flowId}/toggle")
@accepts(ToggleDto, required=False)
@returns(FlowOut)
@requires("flows.write")
async def toggle_flow(request: web.Request) -> web.Response:
    """Pause or resume the live runs of a published flow (its triggers and schedules)."""
    body = structure(await read_json(request), ToggleDto) if (await request.read()).strip() else ToggleDto()
    flow = await service.toggle_flow(
        request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=request.match_info["flowId"], active=body.isActive
    )
    return reply(request, service.flow_json(flow))


@routes.post("/connect/v1/flows/{flowId}/archive")
@returns(FlowOut, status=201, description="Archived")
@requires("flows.write")
async def archive_flow(request: web.Request) -> web.Response:
    """Archive (retire) a flow: it no longer runs; publish or revert brings it back."""
    flow = await service.archive_flow(request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=request.match_info["flowId"])
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
    execution, steps = await service.run_flow_now(
        request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=request.match_info["flowId"], payload=payload
    )
    return reply(request, {**service.execution_json(execution), "steps": [service.step_json(s) for s in steps]}, status=201)


@routes.post("/connect/v1/flows/{flowId}/invoke")
@accepts(TriggerPayload, required=False)
@returns(InvokeOut, status=201, description="The execution ended and no respond step ran")
@returns(
    Media("application/json", {}), status="2XX", description="The status (200 unless the step sets one), headers and body of the flow's first respond step"
)
@requires("flows.write")
async def invoke_flow(request: web.Request) -> web.Response:
    """Run the published version of the flow now, with the body as the trigger payload, and answer
    what its first ``respond`` step says (status, headers, body); without one, the execution's
    outcome. The flow must be published and active."""
    raw = await request.read()
    payload: Any = await read_json(request) if raw.strip() else {}
    execution, response = await service.invoke_flow(
        request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=request.match_info["flowId"], payload=payload
    )
    if response is None:
        return reply(request, {"executionId": execution.id, "status": execution.status, "error": execution.error}, status=201)
    return respond_with(response, execution.id)


#: headers a ``respond`` step may not set: the server frames the answer itself, and a flow does not
#: set cookies on the API's origin
_FRAMING = frozenset({"content-length", "transfer-encoding", "connection", "content-encoding", "set-cookie"})


def respond_with(response: dict[str, Any], execution_id: str) -> web.Response:
    """The answer a ``respond`` step made: a string body as text, any other as JSON."""
    headers = {name: value for name, value in response["headers"].items() if name.lower() not in _FRAMING}
    headers["X-Patchbay-Execution-Id"] = execution_id
    body = response["body"]
    if isinstance(body, str):
        headers.setdefault("Content-Type", "text/plain; charset=utf-8")
        return web.Response(text=body, status=response["status"], headers=headers)
    if not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = "application/json"
    return web.Response(body=json.dumps(body).encode(), status=response["status"], headers=headers)


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
