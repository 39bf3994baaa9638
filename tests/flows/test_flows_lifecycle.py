"""The flow lifecycle of spec 3.1, row by row, with toggle and archive (docs/flows.md)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.models import FlowExecution
from patchbay.core.flows.triggers import fire_matching_triggers
from patchbay.core.testing import create_workspace_with_key

STEPS_V1 = [{"id": "t", "type": "transform", "output": {"v": 1}}]
STEPS_V2 = [{"id": "t", "type": "transform", "output": {"v": 2}}]


async def _flow(client, headers, steps=STEPS_V1, name="F"):
    response = await client.post("/connect/v1/flows", json={"name": name, "steps": steps}, headers=headers)
    assert response.status == 201, await response.text()
    return await response.json()


async def test_create_starts_as_draft(client, workspace):
    flows_client, flows_ws = client, workspace  # SQLite only: the storage paths run on both databases elsewhere
    flow = await _flow(flows_client, flows_ws["headers"])
    assert flow["status"] == "draft" and flow["version"] == 0 and flow["published_at"] is None and flow["steps"] == STEPS_V1
    got = await (await flows_client.get(f"/connect/v1/flows/{flow['id']}", headers=flows_ws["headers"])).json()
    assert got["id"] == flow["id"]


async def test_publish_from_draft_then_from_published_increments_the_version(flows_client, flows_ws):
    h = flows_ws["headers"]
    flow = await _flow(flows_client, h)
    first = await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)
    assert first.status == 201
    body = await first.json()
    assert set(body) == {"id", "version", "status", "published_at"}
    assert body["version"] == 1 and body["status"] == "published" and body["published_at"].endswith("Z")
    second = await (await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)).json()
    assert second["version"] == 2 and second["status"] == "published"
    versions = await (await flows_client.get(f"/connect/v1/flows/{flow['id']}/versions", headers=h)).json()
    assert [v["version"] for v in versions] == [2, 1]
    assert all(v["published_at"] for v in versions)


@pytest.mark.both_databases
async def test_revert_restores_a_snapshot_as_a_new_version_and_keeps_history(flows_client, flows_ws):
    h = flows_ws["headers"]
    flow = await _flow(flows_client, h)
    await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)
    await flows_client.patch(f"/connect/v1/flows/{flow['id']}", json={"steps": STEPS_V2}, headers=h)
    await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)
    reverted = await flows_client.post(f"/connect/v1/flows/{flow['id']}/revert/1", headers=h)
    assert reverted.status == 201
    assert (await reverted.json())["version"] == 3
    current = await (await flows_client.get(f"/connect/v1/flows/{flow['id']}", headers=h)).json()
    assert current["steps"] == STEPS_V1 and current["status"] == "published" and current["publishedVersion"] == 3
    versions = await (await flows_client.get(f"/connect/v1/flows/{flow['id']}/versions?steps=true", headers=h)).json()
    assert [(v["version"], v["steps"]) for v in versions] == [(3, STEPS_V1), (2, STEPS_V2), (1, STEPS_V1)]
    assert versions[0]["action"] == "revert" and versions[0]["revertedFrom"] == 1
    missing = await flows_client.post(f"/connect/v1/flows/{flow['id']}/revert/9", headers=h)
    assert missing.status == 404


async def test_revert_from_a_draft_publishes(client, workspace):
    flows_client, flows_ws = client, workspace  # SQLite only: the storage paths run on both databases elsewhere
    h = flows_ws["headers"]
    flow = await _flow(flows_client, h)
    await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)
    await flows_client.patch(f"/connect/v1/flows/{flow['id']}", json={"name": "edited"}, headers=h)
    body = await (await flows_client.post(f"/connect/v1/flows/{flow['id']}/revert/1", headers=h)).json()
    assert body["status"] == "published" and body["version"] == 2


async def test_an_edit_makes_a_published_flow_draft_while_its_published_version_keeps_running(flows_client, flows_ws):
    app, h, ws = flows_client.server.app, flows_ws["headers"], flows_ws["workspace_id"]
    flow = await _flow(flows_client, h)
    await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)
    await flows_client.post(
        f"/connect/v1/flows/{flow['id']}/triggers", json={"providerType": "facebook", "triggerName": "leadgen", "kind": "webhook"}, headers=h
    )
    edited = await (await flows_client.patch(f"/connect/v1/flows/{flow['id']}", json={"steps": STEPS_V2}, headers=h)).json()
    assert edited["status"] == "draft" and edited["publishedVersion"] == 1 and edited["steps"] == STEPS_V2
    async with app[SERVICES].db.transaction() as session:
        fired = await fire_matching_triggers(
            app[SERVICES], session, workspace_id=ws, provider_type="facebook", event_type="leadgen", payload={}, source="webhook"
        )
    assert fired == 1
    async with app[SERVICES].db.session() as session:
        execution = await session.scalar(select(FlowExecution))
    assert execution.version == 1 and execution.steps is None


async def test_a_draft_never_published_does_not_run_live(flows_client, flows_ws):
    app, h, ws = flows_client.server.app, flows_ws["headers"], flows_ws["workspace_id"]
    flow = await _flow(flows_client, h)
    response = await flows_client.post(
        f"/connect/v1/flows/{flow['id']}/triggers", json={"providerType": "facebook", "triggerName": "leadgen", "kind": "webhook"}, headers=h
    )
    assert response.status == 201
    async with app[SERVICES].db.transaction() as session:
        assert (
            await fire_matching_triggers(app[SERVICES], session, workspace_id=ws, provider_type="facebook", event_type="leadgen", payload={}, source="webhook")
            == 0
        )


async def test_toggle_pauses_and_resumes_live_runs_without_changing_status(flows_client, flows_ws):
    app, h, ws = flows_client.server.app, flows_ws["headers"], flows_ws["workspace_id"]
    flow = await _flow(flows_client, h)
    refused = await flows_client.patch(f"/connect/v1/flows/{flow['id']}/toggle", headers=h)
    assert refused.status == 400
    await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)
    await flows_client.post(
        f"/connect/v1/flows/{flow['id']}/triggers", json={"providerType": "facebook", "triggerName": "leadgen", "kind": "webhook"}, headers=h
    )
    paused = await (await flows_client.patch(f"/connect/v1/flows/{flow['id']}/toggle", headers=h)).json()
    assert paused["isActive"] is False and paused["status"] == "published" and paused["version"] == 1

    async def fire():
        async with app[SERVICES].db.transaction() as session:
            return await fire_matching_triggers(
                app[SERVICES], session, workspace_id=ws, provider_type="facebook", event_type="leadgen", payload={}, source="webhook"
            )

    assert await fire() == 0
    resumed = await (await flows_client.patch(f"/connect/v1/flows/{flow['id']}/toggle", json={"isActive": True}, headers=h)).json()
    assert resumed["isActive"] is True
    assert await fire() == 1


async def test_archive_retires_a_flow_and_publish_brings_it_back(flows_client, flows_ws):
    app, h, ws = flows_client.server.app, flows_ws["headers"], flows_ws["workspace_id"]
    flow = await _flow(flows_client, h)
    await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)
    await flows_client.post(
        f"/connect/v1/flows/{flow['id']}/triggers", json={"providerType": "facebook", "triggerName": "leadgen", "kind": "webhook"}, headers=h
    )
    archived = await (await flows_client.post(f"/connect/v1/flows/{flow['id']}/archive", headers=h)).json()
    assert archived["status"] == "archived"
    async with app[SERVICES].db.transaction() as session:
        assert (
            await fire_matching_triggers(app[SERVICES], session, workspace_id=ws, provider_type="facebook", event_type="leadgen", payload={}, source="webhook")
            == 0
        )
    listed = await (await flows_client.get("/connect/v1/flows?status=archived", headers=h)).json()
    assert [f["id"] for f in listed["data"]] == [flow["id"]]
    back = await (await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)).json()
    assert back["status"] == "published" and back["version"] == 2


async def test_validation_delete_and_tenancy(client, workspace):
    flows_client, flows_ws = client, workspace  # SQLite only: the storage paths run on both databases elsewhere
    app, h = flows_client.server.app, flows_ws["headers"]
    bad = await flows_client.post("/connect/v1/flows", json={"name": "x", "steps": [{"id": "a", "type": "nope"}]}, headers=h)
    assert bad.status == 400 and "steps[0].type" in (await bad.json())["message"]
    dup = await flows_client.post(
        "/connect/v1/flows", json={"name": "x", "steps": [{"id": "a", "type": "transform"}, {"id": "a", "type": "filter"}]}, headers=h
    )
    assert dup.status == 400
    nameless = await flows_client.post("/connect/v1/flows", json={"steps": []}, headers=h)
    assert nameless.status == 400 and "name" in (await nameless.json())["message"]
    flow = await _flow(flows_client, h)
    other = await create_workspace_with_key(app, name="Other")
    assert (await flows_client.get(f"/connect/v1/flows/{flow['id']}", headers=other["headers"])).status == 404
    assert (await flows_client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=other["headers"])).status == 404
    page = await (await flows_client.get("/connect/v1/flows", headers=other["headers"])).json()
    assert page["total"] == 0
    viewer = await create_workspace_with_key(app, name="V", permissions=["flows.view"])
    assert (await flows_client.post("/connect/v1/flows", json={"name": "x", "steps": []}, headers=viewer["headers"])).status == 403
    assert (await flows_client.delete(f"/connect/v1/flows/{flow['id']}", headers=h)).status == 200
    assert (await flows_client.get(f"/connect/v1/flows/{flow['id']}", headers=h)).status == 404
