"""The control steps: branch and switch (the untaken paths recorded skipped), loop (concurrency
bound, per-item results), call_flow (its result, recursion refused past a depth), respond (the
answer of ``POST /flows/{id}/invoke``) and ``onError`` (continue, goto, fail)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select, update

from patchbay import hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.models import FlowExecution
from patchbay.core.flows.steps_control import MAX_CALL_DEPTH
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow

pytestmark = pytest.mark.both_databases


async def _flow(client, h, steps, *, publish=False, name="f"):
    response = await client.post("/connect/v1/flows", json={"name": name, "steps": steps}, headers=h)
    assert response.status == 201, await response.text()
    flow = await response.json()
    assert flow["problems"] == [], flow["problems"]
    if publish:
        assert (await client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)).status == 201
    return flow["id"]


async def _test(client, h, flow_id, payload):
    response = await client.post(f"/connect/v1/flows/{flow_id}/test", json=payload, headers=h)
    assert response.status == 201, await response.text()
    execution = await response.json()
    return execution, {step["stepId"]: step for step in execution["steps"]}


BRANCH = [
    {
        "id": "route",
        "type": "branch",
        "paths": [
            {"name": "big", "condition": "trigger.amount > 100", "steps": [{"id": "big_note", "type": "transform", "output": "big {{ trigger.amount }}"}]},
            {"name": "zero", "condition": "{{ trigger.amount == 0 }}", "steps": [{"id": "zero_note", "type": "transform", "output": "zero"}]},
        ],
        "default": [
            {"id": "small_note", "type": "transform", "output": "small"},
            {"id": "small_more", "type": "transform", "output": "{{ steps.small_note.output }}!"},
        ],
    },
    {"id": "after", "type": "transform", "output": {"path": "{{ steps.route.output.path }}", "said": "{{ steps.route.output.output }}"}},
]


async def test_a_branch_runs_one_path_and_records_the_others_skipped(flows_client, flows_ws):
    h = flows_ws["headers"]
    flow_id = await _flow(flows_client, h, BRANCH)
    execution, steps = await _test(flows_client, h, flow_id, {"amount": 250})
    assert execution["status"] == "completed"
    assert steps["big_note"]["status"] == "completed" and steps["big_note"]["output"] == "big 250"
    assert {steps[s]["status"] for s in ("zero_note", "small_note", "small_more")} == {"skipped"}
    assert steps["route"]["output"] == {"path": "big", "output": "big 250"}
    assert steps["after"]["output"] == {"path": "big", "said": "big 250"}
    assert [s["position"] for s in execution["steps"]] == list(range(6))

    execution, steps = await _test(flows_client, h, flow_id, {"amount": 5})
    assert steps["route"]["output"]["path"] == "default" and steps["small_more"]["output"] == "small!"
    assert steps["big_note"]["status"] == steps["zero_note"]["status"] == "skipped"
    assert steps["after"]["output"] == {"path": "default", "said": "small!"}


async def test_a_switch_picks_the_case_of_its_value(flows_client, flows_ws):
    h = flows_ws["headers"]
    steps = [
        {
            "id": "kind",
            "type": "switch",
            "value": "{{ trigger.type }}",
            "cases": {"customer.created": [{"id": "created", "type": "transform", "output": 1}], "7": [{"id": "seven", "type": "transform", "output": 7}]},
            "default": [{"id": "other", "type": "transform", "output": 0}],
        }
    ]
    flow_id = await _flow(flows_client, h, steps)
    _, ran = await _test(flows_client, h, flow_id, {"type": "customer.created"})
    assert ran["kind"]["output"] == {"value": "customer.created", "path": "customer.created", "output": 1}
    assert ran["seven"]["status"] == ran["other"]["status"] == "skipped"
    _, ran = await _test(flows_client, h, flow_id, {"type": 7})  # a number compared as its JSON text
    assert ran["kind"]["output"]["path"] == "7" and ran["created"]["status"] == "skipped"
    _, ran = await _test(flows_client, h, flow_id, {"type": "refund"})
    assert ran["kind"]["output"]["path"] == "default" and ran["other"]["output"] == 0


class _Gauge:
    """A plugin step type that measures how many of its runs overlap: the first runs wait until
    ``LIMIT`` of them run at once (a loop running fewer at a time times out here), the others pass."""

    LIMIT = 10

    def __init__(self):
        self.running = 0
        self.most = 0
        self.runs = 0
        self.full = asyncio.Event()

    side_effects = False

    async def run(self, context, config):
        self.running += 1
        self.runs += 1
        self.most = max(self.most, self.running)
        if self.running >= self.LIMIT:
            self.full.set()
        try:
            await asyncio.wait_for(self.full.wait(), 10)
            return config["value"] * 2
        finally:
            self.running -= 1

    @hookimpl
    def register_step_types(self, register):
        register("test.gauge", self)


@pytest.mark.slow  # a thousand items on each database
async def test_a_loop_of_a_thousand_items_runs_ten_at_a_time_with_per_item_results(aiohttp_client, make_app, database_url, drain_jobs):
    gauge = _Gauge()
    app = make_app(database_url=database_url, plugins=[gauge])
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    h = ws["headers"]
    steps = [
        {
            "id": "each",
            "type": "loop",
            "items": "{{ trigger.numbers }}",
            "concurrency": 10,
            "steps": [
                {"id": "odd", "type": "filter", "condition": "loop.item % 2 == 1"},
                {"id": "double", "type": "test.gauge", "value": "{{ loop.item }}"},
                {"id": "shape", "type": "transform", "output": {"index": "{{ loop.index }}", "doubled": "{{ steps.double.output }}"}},
            ],
        },
        {"id": "total", "type": "transform", "output": "{{ steps.each.output.completed }}"},
    ]
    flow_id = await _flow(client, h, steps, publish=True)
    async with app[SERVICES].db.transaction() as session:  # a live execution, run by its job
        (execution_id,) = await create_executions(
            app[SERVICES],
            session,
            [
                {
                    "workspace_id": ws["workspace_id"],
                    "flow_id": flow_id,
                    "version": 1,
                    "trigger_source": "webhook",
                    "trigger_payload": {"numbers": list(range(1000))},
                }
            ],
        )
    await drain_jobs(app[SERVICES])
    body = await (await client.get(f"/connect/v1/flows/{flow_id}/executions/{execution_id}", headers=h)).json()
    assert body["status"] == "completed", body
    ran = {step["stepId"]: step for step in body["steps"]}
    output = ran["each"]["output"]
    assert (output["count"], output["completed"], output["skipped"], output["failed"]) == (1000, 500, 500, 0)
    assert [item["index"] for item in output["results"]] == list(range(1000))
    assert output["results"][7] == {"index": 7, "status": "completed", "output": {"index": 7, "doubled": 14}, "error": None}
    assert output["results"][8]["status"] == "skipped"
    assert gauge.runs == 500 and gauge.most == 10
    assert ran["double"]["status"] == "completed" and ran["double"]["output"] == {"completed": 500, "failed": 0, "skipped": 500}
    assert ran["total"]["output"] == 500


async def test_a_failed_item_fails_the_loop_and_no_new_item_starts(flows_client, flows_ws):
    h = flows_ws["headers"]
    steps = [
        {
            "id": "each",
            "type": "loop",
            "items": [1, 2, 0, 4, 5, 6],
            "steps": [{"id": "shape", "type": "transform", "output": "{{ trigger.table[loop.item] }}"}],
        },
        {"id": "after", "type": "transform", "output": 1},
    ]
    flow_id = await _flow(flows_client, h, steps)
    execution, ran = await _test(flows_client, h, flow_id, {"table": {"1": "a"}})
    assert execution["status"] == "failed" and "item 0" in execution["error"]
    items = ran["each"]["output"]["results"]
    assert items[0]["status"] == "failed" and [item["status"] for item in items[1:]] == ["skipped"] * 5
    assert ran["after"]["status"] == "skipped"


async def test_call_flow_answers_the_called_flows_result_and_recursion_is_refused(flows_client, flows_ws):
    h = flows_ws["headers"]
    child = await _flow(
        flows_client,
        h,
        [
            {"id": "greet", "type": "transform", "output": "hello {{ trigger.name }}"},
            {"id": "answer", "type": "respond", "status": 201, "body": {"greeting": "{{ steps.greet.output }}"}},
        ],
        publish=True,
        name="child",
    )
    parent = await _flow(
        flows_client,
        h,
        [
            {"id": "call", "type": "call_flow", "flowId": child, "input": {"name": "{{ trigger.who }}"}},
            {"id": "use", "type": "transform", "output": "{{ steps.call.output.output.greeting }}"},
        ],
        name="parent",
    )
    execution, ran = await _test(flows_client, h, parent, {"who": "Ada"})
    assert execution["status"] == "completed" and ran["use"]["output"] == "hello Ada"
    called = await (await flows_client.get(f"/connect/v1/flows/{child}/executions/{ran['call']['output']['executionId']}", headers=h)).json()
    assert called["triggerSource"] == "call_flow" and called["triggerPayload"] == {"name": "Ada"} and called["status"] == "completed"

    # two flows calling each other: refused past the depth, every level failing with the reason
    ping = await _flow(flows_client, h, [], name="ping")
    pong = await _flow(flows_client, h, [{"id": "call", "type": "call_flow", "flowId": ping}], publish=True, name="pong")
    updated = await flows_client.patch(f"/connect/v1/flows/{ping}", json={"steps": [{"id": "call", "type": "call_flow", "flowId": pong}]}, headers=h)
    assert (await updated.json())["problems"] == []
    assert (await flows_client.post(f"/connect/v1/flows/{ping}/publish", headers=h)).status == 201
    execution, ran = await _test(flows_client, h, ping, {})
    assert execution["status"] == "failed" and f"more than {MAX_CALL_DEPTH} deep" in execution["error"]
    async with flows_client.server.app[SERVICES].db.session() as session:
        nested = (
            await session.scalars(select(FlowExecution).where(FlowExecution.trigger_source == "call_flow", FlowExecution.flow_id.in_([ping, pong])))
        ).all()
    assert len(nested) == MAX_CALL_DEPTH and {e.status for e in nested} == {"failed"}


async def test_invoke_answers_what_the_respond_step_says(flows_client, flows_ws):
    h = flows_ws["headers"]
    steps = [
        {
            "id": "check",
            "type": "branch",
            "paths": [
                {
                    "name": "bad",
                    "condition": "not trigger.email",
                    "steps": [{"id": "refuse", "type": "respond", "status": 422, "body": {"error": "email is required"}}],
                }
            ],
        },
        {
            "id": "ok",
            "type": "respond",
            "status": "{{ 201 }}",
            "headers": {"X-Created": "{{ trigger.email }}", "Set-Cookie": "session=flow"},
            "body": {"email": "{{ trigger.email }}"},
        },
        {"id": "later", "type": "transform", "output": "still runs"},
    ]
    flow_id = await _flow(flows_client, h, steps)
    draft = await flows_client.post(f"/connect/v1/flows/{flow_id}/invoke", json={"email": "a@b.c"}, headers=h)
    assert draft.status == 400 and "publish it" in (await draft.json())["message"]
    await flows_client.post(f"/connect/v1/flows/{flow_id}/publish", headers=h)
    created = await flows_client.post(f"/connect/v1/flows/{flow_id}/invoke", json={"email": "a@b.c"}, headers=h)
    assert created.status == 201 and await created.json() == {"email": "a@b.c"}
    assert created.headers["X-Created"] == "a@b.c" and "Set-Cookie" not in created.headers
    execution_id = created.headers["X-Patchbay-Execution-Id"]
    body = await (await flows_client.get(f"/connect/v1/flows/{flow_id}/executions/{execution_id}", headers=h)).json()
    assert body["triggerSource"] == "invoke" and body["steps"][-1]["output"] == "still runs"
    refused = await flows_client.post(f"/connect/v1/flows/{flow_id}/invoke", json={"email": ""}, headers=h)  # the first respond wins
    assert refused.status == 422 and await refused.json() == {"error": "email is required"}

    plain = await _flow(flows_client, h, [{"id": "t", "type": "transform", "output": 1}], publish=True, name="plain")
    answered_response = await flows_client.post(f"/connect/v1/flows/{plain}/invoke", headers=h)
    assert answered_response.status == 201
    answered = await answered_response.json()
    assert answered["status"] == "completed" and answered["error"] is None and answered["executionId"]
    assert (await flows_client.post("/connect/v1/flows/missing/invoke", headers=h)).status == 404


async def test_on_error_continue_goto_and_fail(flows_client, flows_ws):
    h = flows_ws["headers"]
    broken = {"type": "transform", "output": "{{ trigger.missing.deeper }}"}
    cont = await _flow(flows_client, h, [{"id": "a", **broken, "onError": "continue"}, {"id": "b", "type": "transform", "output": "{{ steps.a.status }}"}])
    execution, ran = await _test(flows_client, h, cont, {})
    assert execution["status"] == "completed" and ran["a"]["status"] == "failed" and ran["a"]["error"]
    assert ran["b"]["output"] == "failed"

    forward = await _flow(
        flows_client,
        h,
        [
            {"id": "a", **broken, "onError": "goto:recover"},
            {"id": "b", "type": "transform", "output": "jumped over"},
            {"id": "recover", "type": "transform", "output": "recovered"},
        ],
    )
    execution, ran = await _test(flows_client, h, forward, {})
    assert execution["status"] == "completed" and ran["b"]["status"] == "skipped" and ran["recover"]["output"] == "recovered"

    back = await _flow(
        flows_client,
        h,
        [
            {"id": "start", "type": "transform", "output": "again"},
            {"id": "a", **broken, "onError": "goto:start", "gotoLimit": 2},
            {"id": "z", "type": "transform", "output": 1},
        ],
    )
    execution, ran = await _test(flows_client, h, back, {})
    assert execution["status"] == "failed" and "after 2 jumps to 'start'" in execution["error"] and ran["z"]["status"] == "skipped"

    inner = await _flow(
        flows_client,
        h,
        [
            {"id": "route", "type": "branch", "onError": "continue", "paths": [{"name": "all", "condition": "true", "steps": [{"id": "a", **broken}]}]},
            {"id": "after", "type": "transform", "output": "{{ steps.route.status }}"},
        ],
    )
    execution, ran = await _test(flows_client, h, inner, {})  # a failure inside a branch is the branch's, its onError decides
    assert execution["status"] == "completed" and ran["route"]["status"] == "failed" and "step 'a' failed" in ran["route"]["error"]
    assert ran["after"]["output"] == "failed"

    fail = await _flow(flows_client, h, [{"id": "a", **broken, "onError": "fail"}, {"id": "b", "type": "transform", "output": 1}])
    execution, ran = await _test(flows_client, h, fail, {})
    assert execution["status"] == "failed" and execution["error"].startswith("step 'a' failed") and ran["b"]["status"] == "skipped"


async def test_call_flow_cannot_reach_another_workspaces_flow(flows_client, flows_ws):
    app, h = flows_client.server.app, flows_ws["headers"]
    other = await create_workspace_with_key(app, name="Other")
    theirs = await _flow(flows_client, other["headers"], [{"id": "secret", "type": "respond", "body": "their data"}], publish=True, name="theirs")
    response = await flows_client.post("/connect/v1/flows", json={"name": "mine", "steps": [{"id": "call", "type": "call_flow", "flowId": theirs}]}, headers=h)
    mine = await response.json()
    assert [(p["stepId"], p["field"]) for p in mine["problems"]] == [("call", "flowId")]
    execution, ran = await _test(flows_client, h, mine["id"], {})
    assert execution["status"] == "failed" and ran["call"]["error"] == f"Flow not found: {theirs}" and ran["call"]["output"] is None


async def test_a_long_delay_inside_a_branch_parks_the_execution_and_it_resumes_on_its_path(flows_client, flows_ws):
    from patchbay.core.flows.engine import run_execution

    app, h = flows_client.server.app, flows_ws["headers"]
    steps = [
        {"id": "first", "type": "transform", "output": "{{ trigger.n }}"},
        {
            "id": "route",
            "type": "branch",
            "paths": [
                {
                    "name": "slow",
                    "condition": "trigger.n > 1",
                    "steps": [
                        {"id": "wait", "type": "delay", "seconds": 60},
                        {"id": "then", "type": "transform", "output": "waited {{ steps.wait.output.seconds }}"},
                    ],
                }
            ],
            "default": [{"id": "fast", "type": "transform", "output": "fast"}],
        },
        {"id": "last", "type": "transform", "output": "{{ steps.route.output.output }}"},
    ]
    flow_id = await _flow(flows_client, h, steps, publish=True)
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES],
            session,
            [{"workspace_id": flows_ws["workspace_id"], "flow_id": flow_id, "version": 1, "trigger_source": "webhook", "trigger_payload": {"n": 2}}],
        )
    assert await run_execution(app[SERVICES], execution_id) is None  # parked by the delay, its steps so far checkpointed
    parked = await (await flows_client.get(f"/connect/v1/flows/{flow_id}/executions/{execution_id}", headers=h)).json()
    assert parked["status"] == "waiting" and [(s["stepId"], s["status"]) for s in parked["steps"]] == [
        ("first", "completed"),
        ("wait", "completed"),
        ("fast", "skipped"),  # the path not taken shows while the execution waits
    ]
    assert await run_execution(app[SERVICES], execution_id) is None  # not due yet: a job run early changes nothing
    async with app[SERVICES].db.transaction() as session:  # the minute passes: make that now rather than wait
        await session.execute(update(FlowExecution).where(FlowExecution.id == execution_id).values(resume_at=utcnow()))
    assert await run_execution(app[SERVICES], execution_id) == "completed"  # what the delayed job does
    body = await (await flows_client.get(f"/connect/v1/flows/{flow_id}/executions/{execution_id}", headers=h)).json()
    ran = {s["stepId"]: s for s in body["steps"]}
    assert ran["route"]["output"] == {"path": "slow", "output": "waited 60.0"} and ran["fast"]["status"] == "skipped"
    assert ran["last"]["output"] == "waited 60.0" and len(body["steps"]) == 6
