"""A workspace's error flow runs on every failed execution with what failed; it never triggers itself."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.models import FlowExecution
from patchbay.testing import Receiver

API = "/connect/v1"
REFUSED = "http://127.0.0.1:1/refused"


async def _published(client, h, name, steps) -> str:
    flow = await (await client.post(f"{API}/flows", json={"name": name, "steps": steps}, headers=h)).json()
    assert (await client.post(f"{API}/flows/{flow['id']}/publish", headers=h)).status == 201
    return flow["id"]


async def _run(app, drain_jobs, workspace_id, flow_id) -> str:
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES], session, [{"workspace_id": workspace_id, "flow_id": flow_id, "version": 1, "trigger_source": "webhook", "trigger_payload": {}}]
        )
    await drain_jobs(app[SERVICES])
    return execution_id


async def _executions(app, flow_id) -> list[FlowExecution]:
    async with app[SERVICES].db.session() as session:
        return list((await session.scalars(select(FlowExecution).where(FlowExecution.flow_id == flow_id).order_by(FlowExecution.created_at))).all())


@pytest.mark.both_databases
async def test_the_error_flow_fires_on_a_failed_execution(flows_client, flows_ws, drain_jobs):
    client, app, h = flows_client, flows_client.server.app, flows_ws["headers"]
    receiver = await Receiver().start()
    failing = await _published(
        client, h, "failing", [{"id": "a", "type": "transform", "output": 1}, {"id": "b", "type": "http", "method": "POST", "url": REFUSED}]
    )
    handler = await _published(client, h, "on error", [{"id": "tell", "type": "http", "method": "POST", "url": receiver.url + "/err", "body": "{{ trigger }}"}])
    assert (await (await client.get(f"{API}/flows/settings", headers=h)).json()) == {"errorFlowId": None, "maxConcurrentExecutions": None}
    response = await client.put(f"{API}/flows/settings", json={"errorFlowId": handler}, headers=h)
    assert response.status == 200 and (await response.json())["errorFlowId"] == handler

    failed_id = await _run(app, drain_jobs, flows_ws["workspace_id"], failing)
    (run,) = await _executions(app, handler)
    assert run.trigger_source == "error" and run.status == "completed"
    assert run.trigger_payload["executionId"] == failed_id and run.trigger_payload["flowId"] == failing
    assert run.trigger_payload["flowName"] == "failing" and run.trigger_payload["stepId"] == "b"
    assert run.trigger_payload["error"].startswith("step 'b' failed")
    assert len(receiver.requests) == 1
    assert json.loads(receiver.requests[0]["body"])["executionId"] == failed_id

    # a completed execution starts nothing
    ok = await _published(client, h, "fine", [{"id": "a", "type": "transform", "output": 1}])
    await _run(app, drain_jobs, flows_ws["workspace_id"], ok)
    assert len(await _executions(app, handler)) == 1
    await receiver.close()


@pytest.mark.both_databases
async def test_an_error_flow_does_not_trigger_itself(flows_client, flows_ws, drain_jobs):
    client, app, h = flows_client, flows_client.server.app, flows_ws["headers"]
    failing = await _published(client, h, "failing", [{"id": "b", "type": "http", "method": "POST", "url": REFUSED}])
    broken_handler = await _published(client, h, "broken handler", [{"id": "tell", "type": "http", "method": "POST", "url": REFUSED}])
    assert (await client.put(f"{API}/flows/settings", json={"errorFlowId": broken_handler}, headers=h)).status == 200

    await _run(app, drain_jobs, flows_ws["workspace_id"], failing)  # fails; the error flow runs and fails too
    runs = await _executions(app, broken_handler)
    assert [(r.trigger_source, r.status) for r in runs] == [("error", "failed")]
    await _run(app, drain_jobs, flows_ws["workspace_id"], broken_handler)  # the error flow itself fails
    runs = await _executions(app, broken_handler)
    assert sorted((r.trigger_source, r.status) for r in runs) == [("error", "failed"), ("webhook", "failed")]


@pytest.mark.both_databases
async def test_the_error_flow_must_be_a_flow_of_the_workspace(flows_client, flows_ws):
    h = flows_ws["headers"]
    response = await flows_client.put(f"{API}/flows/settings", json={"errorFlowId": "no-such-flow"}, headers=h)
    assert response.status == 404
    response = await flows_client.put(f"{API}/flows/settings", json={"maxConcurrentExecutions": 0}, headers=h)
    assert response.status == 400
