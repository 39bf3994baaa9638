"""The engine: step types, rendered inputs, outputs and errors, timeouts, test runs, executions,
replay and task history."""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

import pytest
from aiohttp import web
from sqlalchemy import func, select

from patchbay import hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.models import FlowExecution
from patchbay.core.jobs.models import Job
from patchbay.core.tables.service import create_table, upsert_row
from patchbay.core.testing import create_workspace_with_key


class SlowStepPlugin:
    """A plugin step type: sleeps, then echoes its config."""

    class Slow:
        side_effects = False

        async def run(self, context, config):
            await asyncio.sleep(config.get("sleep", 0))
            return {"echo": config, "flow": context.flow_id}

    @hookimpl
    def register_step_types(self, register):
        register("test.slow", self.Slow())


@pytest.fixture
async def engine_client(aiohttp_client, make_app, database_url):
    return await aiohttp_client(make_app(database_url=database_url, plugins=[SlowStepPlugin()]))


@pytest.fixture
async def ws(engine_client):
    return await create_workspace_with_key(engine_client.server.app)


@pytest.fixture
async def target(aiohttp_server):
    seen, keys = [], []

    async def ok(request):
        keys.append(request.headers.get("Idempotency-Key"))
        seen.append(await request.json() if request.can_read_body else None)
        return web.json_response({"received": seen[-1], "n": len(seen)})

    async def fail(request):
        return web.Response(status=503, text="down")

    async def raw(request):  # answers the text of its ``?text=`` as it is
        return web.Response(text=request.query["text"], content_type="text/plain")

    app = web.Application()
    app.router.add_post("/ok", ok)
    app.router.add_post("/fail", fail)
    app.router.add_post("/raw", raw)
    server = await aiohttp_server(app)
    return {"url": str(server.make_url("")), "seen": seen, "keys": keys}


async def _create(client, headers, steps, name="flow"):
    response = await client.post("/connect/v1/flows", json={"name": name, "steps": steps}, headers=headers)
    assert response.status == 201, await response.text()
    return (await response.json())["id"]


async def _test(client, headers, flow_id, payload):
    response = await client.post(f"/connect/v1/flows/{flow_id}/test", json=payload, headers=headers)
    assert response.status == 201, await response.text()
    return await response.json()


async def test_a_test_run_renders_each_step_and_records_input_output(engine_client, ws, target):
    h = ws["headers"]
    steps = [
        {"id": "shape", "type": "transform", "output": {"email": "{{ trigger.email | lower }}", "amount": "{{ trigger.amount }}"}},
        {"id": "big", "type": "filter", "condition": "steps.shape.output.amount > 10"},
        {
            "id": "post",
            "type": "http",
            "method": "POST",
            "url": target["url"] + "/ok",
            "body": {"who": "{{ steps.shape.output.email }}", "n": "{{ trigger.amount }}"},
        },
        {"id": "last", "type": "transform", "output": "{{ steps.post.output.body.n }}"},
    ]
    flow_id = await _create(engine_client, h, steps)
    execution = await _test(engine_client, h, flow_id, {"email": "ADA@Example.com", "amount": 42})
    assert execution["status"] == "completed" and execution["triggerSource"] == "test" and execution["error"] is None
    assert execution["durationMs"] is not None and execution["triggerPayload"] == {"email": "ADA@Example.com", "amount": 42}
    by_id = {s["stepId"]: s for s in execution["steps"]}
    assert [s["stepId"] for s in execution["steps"]] == ["shape", "big", "post", "last"]
    assert by_id["shape"]["output"] == {"email": "ada@example.com", "amount": 42}
    assert by_id["big"]["output"] == {"passed": True}
    assert by_id["post"]["input"]["body"] == {"who": "ada@example.com", "n": 42}
    assert by_id["post"]["output"]["status"] == 200 and target["seen"] == [{"who": "ada@example.com", "n": 42}]
    assert by_id["last"]["output"] == 1 and all(s["status"] == "completed" for s in execution["steps"])
    assert target["keys"] == [f"{execution['id']}:post"]  # the execution and the step: a re-run after a crash sends the same key


@pytest.mark.parametrize(
    ("text", "body"),
    [(' {"a": [1, 2]}', {"a": [1, 2]}), ("\n-12.5", -12.5), ("true", True), ("null", None), ("ok", "ok"), ("{not json", "{not json"), ("", None)],
)
async def test_an_http_steps_answer_is_json_when_it_parses_and_text_otherwise(engine_client, ws, target, text, body):
    flow_id = await _create(
        engine_client, ws["headers"], [{"id": "get", "type": "http", "method": "POST", "url": target["url"] + "/raw?" + urlencode({"text": text})}]
    )
    execution = await _test(engine_client, ws["headers"], flow_id, {})
    assert execution["status"] == "completed", execution
    assert execution["steps"][0]["output"] == {"status": 200, "body": body}


async def test_a_filter_that_fails_ends_the_execution_completed_and_skips_the_rest(engine_client, ws, target):
    h = ws["headers"]
    steps = [
        {"id": "gate", "type": "filter", "condition": "{{ trigger.ok }}"},
        {"id": "post", "type": "http", "method": "POST", "url": target["url"] + "/ok", "body": {}},
    ]
    execution = await _test(engine_client, h, await _create(engine_client, h, steps), {"ok": False})
    assert execution["status"] == "completed"
    assert [(s["stepId"], s["status"]) for s in execution["steps"]] == [("gate", "completed"), ("post", "skipped")]
    assert target["seen"] == []


async def test_failures_are_recorded_per_step(engine_client, ws, target):
    h = ws["headers"]
    cases = [
        ([{"id": "post", "type": "http", "method": "POST", "url": target["url"] + "/fail"}], "HTTP 503"),
        ([{"id": "slow", "type": "test.slow", "sleep": 5, "timeoutSeconds": 0.2}], "timed out after 0.2s"),
        ([{"id": "evil", "type": "transform", "output": "{{ trigger.__class__.__mro__ }}"}], "sandbox"),
        ([{"id": "look", "type": "table.lookup", "table": "missing", "column": "email", "value": "x"}], "missing"),
    ]
    for steps, message in cases:
        execution = await _test(engine_client, h, await _create(engine_client, h, steps + [{"id": "after", "type": "transform", "output": 1}]), {})
        assert execution["status"] == "failed", message
        assert message in execution["error"]
        first, after = execution["steps"]
        assert first["status"] == "failed" and message in first["error"] and after["status"] == "skipped"


async def test_plugin_step_types_and_table_steps(engine_client, ws):
    app, h = engine_client.server.app, ws["headers"]
    async with app[SERVICES].db.transaction(tenant=ws["workspace_id"]) as session:
        await create_table(
            session,
            workspace_id=ws["workspace_id"],
            name="Customers",
            slug="customers",
            columns=[{"name": "email", "type": "text"}, {"name": "tier", "type": "text"}],
        )
        await upsert_row(session, workspace_id=ws["workspace_id"], table_slug="customers", external_key="c1", data={"email": "ada@example.com", "tier": "gold"})
    steps = [
        {"id": "find", "type": "table.lookup", "table": "customers", "column": "email", "value": "{{ trigger.email }}"},
        {
            "id": "save",
            "type": "table.upsert",
            "table": "customers",
            "externalKey": "{{ trigger.id }}",
            "data": {"email": "{{ trigger.email }}", "tier": "{{ steps.find.output.data.tier }}"},
        },
        {"id": "echo", "type": "test.slow", "sleep": 0, "tier": "{{ steps.save.output.data.tier }}"},
    ]
    execution = await _test(engine_client, h, await _create(engine_client, h, steps), {"email": "ada@example.com", "id": "c2"})
    assert execution["status"] == "completed", execution
    find, save, echo = execution["steps"]
    assert find["output"]["external_key"] == "c1" and save["output"]["external_key"] == "c2"
    assert echo["output"]["echo"] == {"sleep": 0, "tier": "gold"}
    options = await (await engine_client.get("/connect/v1/flows/action-options", headers=h)).json()
    assert "test.slow" in options["stepTypes"] and "table.lookup" in options["stepTypes"]


async def test_test_runs_send_no_alerts_while_replays_do(engine_client, ws, drain_jobs):
    app, h = engine_client.server.app, ws["headers"]
    created = await engine_client.post(
        "/connect/v1/alerts", json={"channel": "webhook", "target": "http://127.0.0.1:9/x", "eventTypes": ["flow.failed", "flow.succeeded"]}, headers=h
    )
    assert created.status == 201
    flow_id = await _create(engine_client, h, [{"id": "t", "type": "transform", "output": "{{ trigger.n }}"}])
    execution = await _test(engine_client, h, flow_id, {"n": 1})

    async def alert_jobs():
        async with app[SERVICES].db.session() as session:
            return await session.scalar(select(func.count()).select_from(Job).where(Job.kind == "alerts.deliver"))

    assert await alert_jobs() == 0
    replay = await engine_client.post(f"/connect/v1/flows/{flow_id}/executions/{execution['id']}/replay", headers=h)
    assert replay.status == 201
    replayed = await replay.json()
    assert replayed["status"] == "pending" and replayed["triggerSource"] == "replay" and replayed["replayOf"] == execution["id"]
    await drain_jobs(app[SERVICES], kinds=("flows.execute",))
    assert await alert_jobs() == 1
    steps = await (await engine_client.get(f"/connect/v1/flows/{flow_id}/executions/{replayed['id']}/steps", headers=h)).json()
    assert steps[0]["output"] == 1


async def test_replay_runs_the_published_version_with_the_original_payload(engine_client, ws, drain_jobs):
    app, h = engine_client.server.app, ws["headers"]
    flow_id = await _create(engine_client, h, [{"id": "t", "type": "transform", "output": "v1 {{ trigger.n }}"}])
    first = await _test(engine_client, h, flow_id, {"n": 7})
    never_published = await (await engine_client.post(f"/connect/v1/flows/{flow_id}/executions/{first['id']}/replay", headers=h)).json()
    assert never_published["version"] is None
    await engine_client.post(f"/connect/v1/flows/{flow_id}/publish", headers=h)
    await engine_client.patch(f"/connect/v1/flows/{flow_id}", json={"steps": [{"id": "t", "type": "transform", "output": "draft {{ trigger.n }}"}]}, headers=h)
    published = await (await engine_client.post(f"/connect/v1/flows/{flow_id}/executions/{first['id']}/replay", headers=h)).json()
    assert published["version"] == 1
    await drain_jobs(app[SERVICES])
    for execution_id, expected in ((never_published["id"], "v1 7"), (published["id"], "v1 7")):
        body = await (await engine_client.get(f"/connect/v1/flows/{flow_id}/executions/{execution_id}", headers=h)).json()
        assert body["status"] == "completed" and body["steps"][0]["output"] == expected
        assert body["triggerPayload"] == {"n": 7}


async def test_permissions_of_steps_and_replay(engine_client, ws):
    app, h = engine_client.server.app, ws["headers"]
    flow_id = await _create(engine_client, h, [{"id": "t", "type": "transform", "output": 1}])
    execution = await _test(engine_client, h, flow_id, {})
    writer = await create_workspace_with_key(app, name="W", permissions=["flows.write", "flows.view"])
    inspector = await create_workspace_with_key(app, name="I", permissions=["task_history.view", "flows.view"])
    for key in (writer, inspector):
        response = await engine_client.post(f"/connect/v1/flows/{flow_id}/executions/{execution['id']}/replay", headers=key["headers"])
        assert response.status == 403
    steps = await engine_client.get(f"/connect/v1/flows/{flow_id}/executions/{execution['id']}/steps", headers=writer["headers"])
    assert steps.status == 403
    other = await create_workspace_with_key(app, name="O")
    assert (await engine_client.get(f"/connect/v1/flows/{flow_id}/executions/{execution['id']}/steps", headers=other["headers"])).status == 404
    assert (await engine_client.post(f"/connect/v1/flows/{flow_id}/executions/{execution['id']}/replay", headers=other["headers"])).status == 404


@pytest.mark.both_databases
async def test_execution_lists_and_task_history(engine_client, ws):
    h = ws["headers"]
    ok_flow = await _create(engine_client, h, [{"id": "t", "type": "transform", "output": 1}], name="ok")
    bad_flow = await _create(engine_client, h, [{"id": "t", "type": "transform", "output": "{{ trigger.missing }}"}], name="bad")
    for _ in range(3):
        await _test(engine_client, h, ok_flow, {})
    await _test(engine_client, h, bad_flow, {})
    page = await (await engine_client.get(f"/connect/v1/flows/{ok_flow}/executions?page=2&limit=2", headers=h)).json()
    assert page["total"] == 3 and page["page"] == 2 and len(page["data"]) == 1
    failed = await (await engine_client.get("/connect/v1/task-history?status=failed", headers=h)).json()
    assert failed["total"] == 1 and failed["data"][0]["flowId"] == bad_flow
    of_flow = await (await engine_client.get(f"/connect/v1/task-history?flowId={ok_flow}", headers=h)).json()
    assert of_flow["total"] == 3 and {e["flowId"] for e in of_flow["data"]} == {ok_flow}
    everything = await (await engine_client.get("/connect/v1/task-history", headers=h)).json()
    assert everything["total"] == 4
    assert (await engine_client.get("/connect/v1/task-history?status=weird", headers=h)).status == 400
    async with engine_client.server.app[SERVICES].db.session() as session:
        assert await session.scalar(select(func.count()).select_from(FlowExecution)) == 4


async def test_a_long_delay_parks_the_execution_durably_and_resumes_it(client, workspace, drain_jobs):
    from datetime import timedelta

    from sqlalchemy import update

    from patchbay.core.flows.engine import create_executions
    from patchbay.core.timeutil import utcnow

    app, h = client.server.app, workspace["headers"]
    steps = [
        {"id": "a", "type": "transform", "output": "{{ trigger.n }}"},
        {"id": "wait", "type": "delay", "seconds": 3600},
        {"id": "b", "type": "transform", "output": "{{ steps.a.output + 1 }}"},
    ]
    flow_id = await _create(client, h, steps)
    await client.post(f"/connect/v1/flows/{flow_id}/publish", headers=h)
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES],
            session,
            [{"workspace_id": workspace["workspace_id"], "flow_id": flow_id, "version": 1, "trigger_source": "schedule", "trigger_payload": {"n": 1}}],
        )
    await drain_jobs(app[SERVICES])
    parked = await (await client.get(f"/connect/v1/flows/{flow_id}/executions/{execution_id}", headers=h)).json()
    assert parked["status"] == "waiting" and [s["stepId"] for s in parked["steps"]] == ["a", "wait"]
    async with app[SERVICES].db.session() as session:
        (waiting,) = (await session.scalars(select(Job).where(Job.kind == "flows.execute", Job.status == "queued"))).all()
    assert waiting.run_at > utcnow() + timedelta(minutes=59)
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(Job).where(Job.id == waiting.id).values(run_at=utcnow()))
        await session.execute(update(FlowExecution).where(FlowExecution.id == execution_id).values(resume_at=utcnow()))
    await drain_jobs(app[SERVICES])
    done = await (await client.get(f"/connect/v1/flows/{flow_id}/executions/{execution_id}", headers=h)).json()
    assert done["status"] == "completed" and [(s["stepId"], s["output"]) for s in done["steps"]][2] == ("b", 2)
    tested = await _test(client, h, flow_id, {"n": 1})  # a test run does not wait
    assert tested["status"] == "completed" and tested["steps"][1]["output"] == {"seconds": 3600.0, "waited": False}
