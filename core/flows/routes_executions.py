"""Executions over HTTP (spec 4.8, 4.12): a flow's executions, their steps, replay, and the task
history across every flow of the workspace."""

from __future__ import annotations

from aiohttp import web
from sqlalchemy import func, select

from patchbay.core.appkeys import DB
from patchbay.core.flows import engine, service
from patchbay.core.flows.api_models import ExecutionOut, ExecutionPage, ExecutionWithSteps, StepOut
from patchbay.core.flows.models import EXECUTION_STATUSES, FlowExecution
from patchbay.core.http.bodies import page_envelope, page_params
from patchbay.core.http.errors import bad_request, not_found
from patchbay.core.http.openapi import PAGE_QUERY, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


async def _page(request: web.Request, statement) -> web.Response:
    page, limit = page_params(request)
    async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
        if "flowId" in request.match_info:
            await service.get_flow(session, request.match_info["flowId"])
        total = await session.scalar(select(func.count()).select_from(statement.subquery()))
        rows = (await session.scalars(statement.order_by(FlowExecution.created_at.desc(), FlowExecution.id).offset((page - 1) * limit).limit(limit))).all()
    return reply(request, page_envelope([service.execution_json(e) for e in rows], page, limit, total or 0))


STATUS_QUERY = {"type": "string", "enum": list(EXECUTION_STATUSES)}


def _status_filter(request: web.Request, statement):
    status = request.query.get("status")
    if status:
        if status not in EXECUTION_STATUSES:
            raise bad_request(f"status must be one of {', '.join(EXECUTION_STATUSES)}")
        statement = statement.where(FlowExecution.status == status)
    return statement


@routes.get("/connect/v1/flows/{flowId}/executions")
@query(**PAGE_QUERY, status=STATUS_QUERY)
@returns(ExecutionPage)
@requires("flows.view")
async def list_executions(request: web.Request) -> web.Response:
    """A flow's executions, newest first (paginated; ``?status=`` filters)."""
    statement = _status_filter(request, select(FlowExecution).where(FlowExecution.flow_id == request.match_info["flowId"]))
    return await _page(request, statement)


async def _execution(session, flow_id: str, execution_id: str) -> FlowExecution:
    execution = await session.scalar(select(FlowExecution).where(FlowExecution.id == execution_id, FlowExecution.flow_id == flow_id))
    if execution is None:
        raise not_found("Execution not found")
    return execution


@routes.get("/connect/v1/flows/{flowId}/executions/{executionId}")
@returns(ExecutionWithSteps)
@requires("flows.view")
async def get_execution(request: web.Request) -> web.Response:
    """One execution with its steps."""
    async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
        execution = await _execution(session, request.match_info["flowId"], request.match_info["executionId"])
        steps = await service.execution_steps(session, execution.id)
    return reply(request, {**service.execution_json(execution), "steps": [service.step_json(s) for s in steps]})


@routes.get("/connect/v1/flows/{flowId}/executions/{executionId}/steps")
@returns(list[StepOut])
@requires("task_history.view")
async def list_execution_steps(request: web.Request) -> web.Response:
    """Each step of an execution: rendered input, output and error."""
    async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
        execution = await _execution(session, request.match_info["flowId"], request.match_info["executionId"])
        steps = await service.execution_steps(session, execution.id)
    return reply(request, [service.step_json(s) for s in steps])


@routes.post("/connect/v1/flows/{flowId}/executions/{executionId}/replay")
@returns(ExecutionOut, status=201, description="The new (pending) execution")
@requires("flows.write", "task_history.view")
async def replay_execution(request: web.Request) -> web.Response:
    """Run the flow again with the execution's original trigger payload: the published version, or
    the current steps of a flow never published. Answers the new (pending) execution."""
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        flow = await service.get_flow(session, request.match_info["flowId"])
        original = await _execution(session, flow.id, request.match_info["executionId"])
        row = {"workspace_id": workspace_id, "flow_id": flow.id, "trigger_source": "replay", "trigger_payload": original.trigger_payload,
               "replay_of": original.id}  # fmt: skip
        if flow.published_version is not None:
            row["version"] = flow.published_version
        else:
            row["steps"] = flow.steps
        (execution_id,) = await engine.create_executions(request.app, session, [row])
        execution = await session.get(FlowExecution, execution_id)
    return reply(request, service.execution_json(execution), status=201)


@routes.get("/connect/v1/task-history")
@query(**PAGE_QUERY, status=STATUS_QUERY, flowId={"type": "string"})
@returns(ExecutionPage)
@requires("task_history.view")
async def task_history(request: web.Request) -> web.Response:
    """Executions across every flow of the workspace; ``?status=`` and ``?flowId=`` filter."""
    statement = _status_filter(request, select(FlowExecution))
    if request.query.get("flowId"):
        statement = statement.where(FlowExecution.flow_id == request.query["flowId"])
    return await _page(request, statement)


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
