"""Retry a failed execution from its failed step, on the current or the original version: the steps
that had succeeded are not run again, their outputs are reused."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.models import FlowExecution
from patchbay.testing import Receiver

API = "/connect/v1"


async def _run(app, drain_jobs, workspace_id, flow_id, version) -> str:
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES],
            session,
            [{"workspace_id": workspace_id, "flow_id": flow_id, "version": version, "trigger_source": "webhook", "trigger_payload": {"n": 7}}],
        )
    await drain_jobs(app[SERVICES])
    return execution_id


async def _get(client, headers, flow_id, execution_id) -> dict:
    response = await client.get(f"{API}/flows/{flow_id}/executions/{execution_id}", headers=headers)
    assert response.status == 200
    return await response.json()


@pytest.mark.both_databases
async def test_retry_from_the_failed_step_reuses_what_succeeded(flows_client, flows_ws, drain_jobs):
    client, app, h = flows_client, flows_client.server.app, flows_ws["headers"]
    side, fixed = await Receiver().start(), await Receiver().start()

    def steps(b_url):
        return [
            {"id": "a", "type": "http", "method": "POST", "url": side.url + "/a", "body": {"n": "{{ trigger.n }}"}},
            {"id": "b", "type": "http", "method": "POST", "url": b_url, "body": {}},
            {"id": "c", "type": "transform", "output": {"a": "{{ steps.a.output.status }}", "b": "{{ steps.b.output.status }}"}},
        ]

    flow = await (await client.post(f"{API}/flows", json={"name": "retry", "steps": steps("http://127.0.0.1:1/refused")}, headers=h)).json()
    assert (await client.post(f"{API}/flows/{flow['id']}/publish", headers=h)).status == 201
    failed_id = await _run(app, drain_jobs, flows_ws["workspace_id"], flow["id"], 1)
    failed = await _get(client, h, flow["id"], failed_id)
    assert failed["status"] == "failed" and [s["status"] for s in failed["steps"]] == ["completed", "failed", "skipped"]
    assert len(side.requests) == 1

    # on the original version the step fails again, and step a is still not re-run
    response = await client.post(f"{API}/flows/{flow['id']}/executions/{failed_id}/retry", json={"version": "original"}, headers=h)
    assert response.status == 201, await response.text()
    again = await response.json()
    assert again["triggerSource"] == "retry" and again["replayOf"] == failed_id and again["version"] == 1
    await drain_jobs(app[SERVICES])
    again = await _get(client, h, flow["id"], again["id"])
    assert again["status"] == "failed" and [s["stepId"] for s in again["steps"] if s["status"] == "failed"] == ["b"]
    assert len(side.requests) == 1

    # fixed and published as version 2: the retry on the current version completes
    await client.patch(f"{API}/flows/{flow['id']}", json={"steps": steps(fixed.url + "/b")}, headers=h)
    assert (await client.post(f"{API}/flows/{flow['id']}/publish", headers=h)).status == 201
    response = await client.post(f"{API}/flows/{flow['id']}/executions/{failed_id}/retry", json={"fromStep": "b", "version": "current"}, headers=h)
    assert response.status == 201, await response.text()
    retried = await response.json()
    assert retried["version"] == 2
    await drain_jobs(app[SERVICES])
    retried = await _get(client, h, flow["id"], retried["id"])
    assert retried["status"] == "completed", retried["error"]
    assert [s["status"] for s in retried["steps"]] == ["completed", "completed", "completed"]
    assert retried["steps"][2]["output"] == {"a": 200, "b": 200}
    assert retried["steps"][0]["output"] == failed["steps"][0]["output"]
    assert len(side.requests) == 1  # the step that had succeeded was not run again
    assert len(fixed.requests) == 1
    async with app[SERVICES].db.session() as session:
        assert (await session.scalar(select(FlowExecution.status).where(FlowExecution.id == failed_id))) == "failed"

    # only a failed execution is retried; a step the flow does not have is refused
    response = await client.post(f"{API}/flows/{flow['id']}/executions/{retried['id']}/retry", headers=h)
    assert response.status == 409
    response = await client.post(f"{API}/flows/{flow['id']}/executions/{failed_id}/retry", json={"fromStep": "zz"}, headers=h)
    assert response.status == 400 and "zz" in await response.text()
    response = await client.post(f"{API}/flows/{flow['id']}/executions/{failed_id}/retry", json={"version": "newest"}, headers=h)
    assert response.status == 400
    await side.close()
    await fixed.close()
