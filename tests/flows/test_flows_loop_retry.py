"""A retry from a failed loop runs only the items that had not completed: the items that had
completed (same value, same loop steps) keep their results and their side effects do not repeat."""

from __future__ import annotations

import json

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.engine import create_executions, run_steps
from patchbay.core.flows.plan import plan_steps
from patchbay.core.flows.steps import RunContext
from patchbay.testing import Receiver

API = "/connect/v1"
ITEMS = ["a", "b", "c", "d", "e"]


def _steps(url: str, body: dict | None = None) -> list[dict]:
    post = {"id": "post", "type": "http", "method": "POST", "url": url, "body": body or {"item": "{{ loop.item }}"}}
    return [{"id": "each", "type": "loop", "items": "{{ trigger.lines }}", "concurrency": 1, "steps": [post]}]


async def _failed_run(client, h, workspace_id, drain_jobs, steps) -> tuple[str, str]:
    """A published flow of ``steps`` and its execution on ``ITEMS``, run until it ended."""
    app = client.server.app
    flow = await (await client.post(f"{API}/flows", json={"name": "loop retry", "steps": steps}, headers=h)).json()
    assert (await client.post(f"{API}/flows/{flow['id']}/publish", headers=h)).status == 201
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES],
            session,
            [{"workspace_id": workspace_id, "flow_id": flow["id"], "version": 1, "trigger_source": "webhook", "trigger_payload": {"lines": ITEMS}}],
        )
    await drain_jobs(app[SERVICES])
    return flow["id"], execution_id


async def _retry(client, h, drain_jobs, flow_id, execution_id, version) -> dict:
    response = await client.post(f"{API}/flows/{flow_id}/executions/{execution_id}/retry", json={"version": version}, headers=h)
    assert response.status == 201, await response.text()
    await drain_jobs(client.server.app[SERVICES])
    return await _get(client, h, flow_id, (await response.json())["id"])


async def _get(client, h, flow_id, execution_id) -> dict:
    response = await client.get(f"{API}/flows/{flow_id}/executions/{execution_id}", headers=h)
    assert response.status == 200
    return await response.json()


def _posted(receiver: Receiver) -> list[str]:
    return [json.loads(request["body"])["item"] for request in receiver.requests]


@pytest.mark.both_databases
async def test_a_retry_from_a_failed_loop_runs_only_the_items_that_had_not_completed(flows_client, flows_ws, drain_jobs):
    client, h = flows_client, flows_ws["headers"]
    receiver = await Receiver([200, 200, 200, 500, 200]).start()  # item 3 fails the first time only
    flow_id, failed_id = await _failed_run(client, h, flows_ws["workspace_id"], drain_jobs, _steps(receiver.url + "/item"))
    failed = await _get(client, h, flow_id, failed_id)
    assert failed["status"] == "failed", failed
    assert [r["status"] for r in failed["steps"][0]["output"]["results"]] == ["completed"] * 3 + ["failed", "skipped"]
    assert _posted(receiver) == ["a", "b", "c", "d"]

    retried = await _retry(client, h, drain_jobs, flow_id, failed_id, "original")
    assert retried["status"] == "completed", retried["error"]
    assert _posted(receiver) == ["a", "b", "c", "d", "d", "e"]  # only the failed and the skipped item ran again
    output = retried["steps"][0]["output"]
    assert (output["count"], output["completed"], output["failed"], output["skipped"]) == (5, 5, 0, 0)
    assert [(r["index"], r["status"], r.get("reused", False)) for r in output["results"]] == [
        (0, "completed", True),
        (1, "completed", True),
        (2, "completed", True),
        (3, "completed", False),
        (4, "completed", False),
    ]
    assert output["results"][:3] == [{**r, "reused": True} for r in failed["steps"][0]["output"]["results"][:3]]
    await receiver.close()


@pytest.mark.both_databases
async def test_a_retry_on_a_current_version_reuses_items_only_when_the_loop_is_unchanged(flows_client, flows_ws, drain_jobs):
    client, h = flows_client, flows_ws["headers"]
    receiver = await Receiver([200, 200, 200, 500, 200]).start()
    url = receiver.url + "/item"
    flow_id, failed_id = await _failed_run(client, h, flows_ws["workspace_id"], drain_jobs, _steps(url))
    assert len(receiver.requests) == 4

    # a step added after the loop: the loop is the same, its completed items are kept
    after = {"id": "done", "type": "transform", "output": "{{ steps.each.output.completed }}"}
    await client.patch(f"{API}/flows/{flow_id}", json={"steps": [*_steps(url), after]}, headers=h)
    assert (await client.post(f"{API}/flows/{flow_id}/publish", headers=h)).status == 201
    retried = await _retry(client, h, drain_jobs, flow_id, failed_id, "current")
    assert retried["status"] == "completed", retried["error"]
    assert _posted(receiver)[4:] == ["d", "e"]
    assert retried["steps"][-1]["output"] == 5

    # the step inside the loop changed: every item runs again
    await client.patch(f"{API}/flows/{flow_id}", json={"steps": _steps(url, {"item": "{{ loop.item }}", "v": 2})}, headers=h)
    assert (await client.post(f"{API}/flows/{flow_id}/publish", headers=h)).status == 201
    retried = await _retry(client, h, drain_jobs, flow_id, failed_id, "current")
    assert retried["status"] == "completed", retried["error"]
    assert _posted(receiver)[6:] == ITEMS
    assert not any(r.get("reused") for r in retried["steps"][0]["output"]["results"])
    await receiver.close()


@pytest.mark.both_databases
async def test_a_retry_from_a_step_before_the_loop_runs_every_item_again(flows_client, flows_ws, drain_jobs):
    client, h = flows_client, flows_ws["headers"]
    receiver = await Receiver([200, 200, 200, 500, 200]).start()
    first = {"id": "first", "type": "transform", "output": "{{ trigger.lines | length }}"}
    flow_id, failed_id = await _failed_run(client, h, flows_ws["workspace_id"], drain_jobs, [first, *_steps(receiver.url + "/item")])
    assert len(receiver.requests) == 4
    response = await client.post(f"{API}/flows/{flow_id}/executions/{failed_id}/retry", json={"fromStep": "first", "version": "original"}, headers=h)
    assert response.status == 201, await response.text()
    await drain_jobs(client.server.app[SERVICES])
    retried = await _get(client, h, flow_id, (await response.json())["id"])
    assert retried["status"] == "completed", retried["error"]
    assert _posted(receiver)[4:] == ITEMS
    await receiver.close()


async def test_an_item_whose_value_changed_runs_again(flows_client, flows_ws):
    app, receiver = flows_client.server.app, await Receiver().start()
    services = app[SERVICES]
    before = {"index": 0, "status": "completed", "output": {"status": 200, "body": "answer 1"}, "error": None}
    results = [{**before, "index": index} for index in range(3)]
    context = RunContext(
        services,
        flows_ws["workspace_id"],
        "flow",
        "execution",
        {"lines": ["a", "B", "c", "d"]},
        earlier_loops={"each": (["a", "b", "c"], results)},
    )
    outcome = await run_steps(services, context, plan_steps(services.registry, _steps(receiver.url + "/item")), {})
    assert outcome.status == "completed", outcome.error
    assert _posted(receiver) == ["B", "d"]  # changed at index 1, new at index 3
    output = outcome.records[0].output
    assert [r.get("reused", False) for r in output["results"]] == [True, False, True, False]
    await receiver.close()
