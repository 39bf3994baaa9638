"""Executions over HTTP (spec 4.8, 4.12): a flow's executions, their steps, replay, retry from a
failed step, and the task history across every flow of the workspace."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows import executions, service
from patchbay.core.flows.api_models import ExecutionOut, ExecutionPage, ExecutionWithSteps, RetryDto, StepOut, read_checked
from patchbay.core.flows.models import EXECUTION_STATUSES
from patchbay.core.http.bodies import page_envelope, page_params
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()

STATUS_QUERY = {"type": "string", "enum": list(EXECUTION_STATUSES)}


async def _page(request: web.Request, flow_id: str | None, *, of_flow: bool) -> web.Response:
    page, limit = page_params(request)
    rows, total = await executions.execution_page(
        request.app[SERVICES],
        workspace_id=principal_of(request).workspace_id,
        flow_id=flow_id,
        status=request.query.get("status"),
        page=page,
        limit=limit,
        of_flow=of_flow,
    )
    return reply(request, page_envelope([service.execution_json(e) for e in rows], page, limit, total))


@routes.get("/connect/v1/flows/{flowId}/executions")
@query(**PAGE_QUERY, status=STATUS_QUERY)
@returns(ExecutionPage)
@requires("flows.view")
async def list_executions(request: web.Request) -> web.Response:
    """A flow's executions, newest first (paginated; ``?status=`` filters)."""
    return await _page(request, request.match_info["flowId"], of_flow=True)


async def _with_steps(request: web.Request):
    return await executions.execution_with_steps(
        request.app[SERVICES],
        workspace_id=principal_of(request).workspace_id,
        flow_id=request.match_info["flowId"],
        execution_id=request.match_info["executionId"],
    )


@routes.get("/connect/v1/flows/{flowId}/executions/{executionId}")
@returns(ExecutionWithSteps)
@requires("flows.view")
async def get_execution(request: web.Request) -> web.Response:
    """One execution with its steps."""
    execution, steps = await _with_steps(request)
    return reply(request, {**service.execution_json(execution), "steps": [service.step_json(s) for s in steps]})


@routes.get("/connect/v1/flows/{flowId}/executions/{executionId}/steps")
@returns(list[StepOut])
@requires("task_history.view")
async def list_execution_steps(request: web.Request) -> web.Response:
    """Each step of an execution: rendered input, output and error."""
    _, steps = await _with_steps(request)
    return reply(request, [service.step_json(s) for s in steps])


@routes.post("/connect/v1/flows/{flowId}/executions/{executionId}/replay")
@returns(ExecutionOut, status=201, description="The new (pending) execution")
@requires("flows.write", "task_history.view")
async def replay_execution(request: web.Request) -> web.Response:
    """Run the flow again with the execution's original trigger payload: the published version, or
    the current steps of a flow never published. Answers the new (pending) execution."""
    execution = await executions.replay(
        request.app[SERVICES],
        workspace_id=principal_of(request).workspace_id,
        flow_id=request.match_info["flowId"],
        execution_id=request.match_info["executionId"],
    )
    return reply(request, service.execution_json(execution), status=201)


@routes.post("/connect/v1/flows/{flowId}/executions/{executionId}/retry")
@accepts(RetryDto)
@returns(ExecutionOut, status=201, description="The new (pending) execution")
@requires("flows.write", "task_history.view")
async def retry_execution(request: web.Request) -> web.Response:
    """Run a failed execution again from a step (``fromStep``, default the first that failed), on
    the ``current`` published version or the ``original`` one: the steps before it that completed
    are reused with their outputs, not run again. 409 unless the execution failed."""
    body = await read_checked(request, RetryDto, optional=True)
    execution = await executions.retry(
        request.app[SERVICES],
        workspace_id=principal_of(request).workspace_id,
        flow_id=request.match_info["flowId"],
        execution_id=request.match_info["executionId"],
        from_step=body.get("fromStep"),
        version=body.get("version") or "current",
    )
    return reply(request, service.execution_json(execution), status=201)


@routes.get("/connect/v1/task-history")
@query(**PAGE_QUERY, status=STATUS_QUERY, flowId={"type": "string"})
@returns(ExecutionPage)
@requires("task_history.view")
async def task_history(request: web.Request) -> web.Response:
    """Executions across every flow of the workspace; ``?status=`` and ``?flowId=`` filter."""
    return await _page(request, request.query.get("flowId") or None, of_flow=False)


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
