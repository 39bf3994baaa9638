"""Triggers: webhook events through the inbound pipeline, republishing under load, poll triggers with
a cursor, and the active-subscription cap."""

from __future__ import annotations

import asyncio
import json

import attrs
import pytest
from sqlalchemy import func, select

from patchbay import Trigger, hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.models import FlowExecution, FlowTriggerSubscription
from patchbay.core.flows.triggers import poll_triggers
from patchbay.core.testing import create_workspace_with_key
from patchbay.providers.meta.testing import FakeGraph, leadgen_payload, meta_signature
from patchbay.testing import add_connection

SECRET = "meta-app-secret"
LEADGEN = {"providerType": "facebook", "triggerName": "leadgen", "kind": "webhook"}


async def _flow(client, h, steps, *, publish=True, name="f"):
    flow = await (await client.post("/connect/v1/flows", json={"name": name, "steps": steps}, headers=h)).json()
    if publish:
        assert (await client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)).status == 201
    return flow["id"]


async def _executions(app, flow_id=None):
    async with app[SERVICES].db.session() as session:
        statement = select(FlowExecution).order_by(FlowExecution.created_at)
        if flow_id:
            statement = statement.where(FlowExecution.flow_id == flow_id)
        return list((await session.scalars(statement)).all())


async def test_a_webhook_event_reaches_a_published_flow_and_not_a_draft(aiohttp_client, make_app, database_url, drain_jobs):
    graph = await FakeGraph().start()
    try:
        graph.add_lead("lead-1", email="ada@example.com")
        app = make_app(database_url=database_url, providers={"facebook": {"webhook_secret": SECRET, "api_base_url": graph.url}})
        client = await aiohttp_client(app)
        ws = await create_workspace_with_key(app)
        h = ws["headers"]
        await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-1"})
        steps = [{"id": "who", "type": "transform", "output": {"lead": "{{ trigger.leadgen_id }}", "email": "{{ trigger.lead.email | default('') }}"}}]
        published = await _flow(client, h, steps, name="published")
        draft = await _flow(client, h, steps, publish=False, name="draft")
        for flow_id in (published, draft):
            assert (await client.post(f"/connect/v1/flows/{flow_id}/triggers", json=LEADGEN, headers=h)).status == 201
        body = json.dumps(leadgen_payload("page-1", "lead-1")).encode()
        response = await client.post(
            "/webhook/facebook", data=body, headers={"x-hub-signature-256": meta_signature(SECRET, body), "Content-Type": "application/json"}
        )
        assert response.status == 200
        for _ in range(50):
            await drain_jobs(app[SERVICES])
            if await _executions(app):
                break
            await asyncio.sleep(0.05)
        await drain_jobs(app[SERVICES])
        assert await _executions(app, draft) == []
        (execution,) = await _executions(app, published)
        assert execution.status == "completed" and execution.trigger_source == "webhook" and execution.version == 1
        assert execution.trigger_payload["leadgen_id"] == "lead-1"
        steps_body = await (await client.get(f"/connect/v1/flows/{published}/executions/{execution.id}/steps", headers=h)).json()
        assert steps_body[0]["output"]["lead"] == "lead-1"
    finally:
        await graph.close()


@attrs.define
class _Event:
    id: str
    workspace_id: str
    provider: str
    event_type: str
    payload: dict
    connection_id: str | None = None


@pytest.mark.both_databases
@pytest.mark.slow  # about 2 s (setup and call)
async def test_republishing_neither_drops_nor_doubles_events(flows_client, flows_ws, drain_jobs):
    app, h, ws = flows_client.server.app, flows_ws["headers"], flows_ws["workspace_id"]
    flow_id = await _flow(flows_client, h, [{"id": "t", "type": "transform", "output": "{{ trigger.n }}"}])
    await flows_client.post(f"/connect/v1/flows/{flow_id}/triggers", json=LEADGEN, headers=h)
    listener = app[SERVICES].webhook_listeners
    events = [_Event(f"evt-{n}", ws, "facebook", "leadgen", {"n": n}) for n in range(40)]

    async def deliver(event):
        async with app[SERVICES].db.transaction() as session:
            await listener.notify(session, event)

    async def republish(n):
        await asyncio.sleep(0.001 * n)
        steps = [{"id": "t", "type": "transform", "output": f"v{n} " + "{{ trigger.n }}"}]
        await flows_client.patch(f"/connect/v1/flows/{flow_id}", json={"steps": steps}, headers=h)
        assert (await flows_client.post(f"/connect/v1/flows/{flow_id}/publish", headers=h)).status == 201

    await asyncio.gather(*(deliver(e) for e in events), *(republish(n) for n in range(8)))
    await asyncio.gather(*(deliver(e) for e in events[:10]))  # redelivered events start nothing new
    executions = await _executions(app, flow_id)
    assert sorted(e.trigger_payload["n"] for e in executions) == list(range(40))
    assert all(e.version is not None and 1 <= e.version <= 9 for e in executions)
    await drain_jobs(app[SERVICES])
    assert {e.status for e in await _executions(app, flow_id)} == {"completed"}


class _ItemsPlugin:
    """A poll trigger on the hubspot provider whose source returns items 1..n, n growing."""

    def __init__(self):
        self.items = [{"id": "1"}]
        self.cursors = []

    @hookimpl
    def register_triggers(self, register):
        async def poll(client, config, cursor):
            self.cursors.append(cursor)
            return list(self.items), len(self.items)

        register("hubspot", Trigger(name="test_items", display_name="Test items", kind="poll", poll=poll))


async def test_a_poll_trigger_runs_an_item_once_and_keeps_its_cursor(aiohttp_client, make_app, database_url, drain_jobs):
    plugin = _ItemsPlugin()
    app = make_app(database_url=database_url, plugins=[plugin])
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    h = ws["headers"]
    connection_id = await add_connection(app, ws["workspace_id"], "hubspot")
    flow_id = await _flow(client, h, [{"id": "t", "type": "transform", "output": "{{ trigger.id }}"}])
    no_connection = await client.post(
        f"/connect/v1/flows/{flow_id}/triggers", json={"providerType": "hubspot", "triggerName": "test_items", "kind": "poll"}, headers=h
    )
    assert no_connection.status == 400
    created = await client.post(
        f"/connect/v1/flows/{flow_id}/triggers",
        json={"providerType": "hubspot", "triggerName": "test_items", "kind": "poll", "connectionId": connection_id},
        headers=h,
    )
    assert created.status == 201
    first = await poll_triggers(app[SERVICES])
    assert first == {"subscriptions": 1, "executions": 1}
    plugin.items.append({"id": "2"})
    second = await poll_triggers(app[SERVICES])  # sees item 1 again and item 2 for the first time
    assert second["executions"] == 1
    assert plugin.cursors == [None, 1]
    await drain_jobs(app[SERVICES])
    executions = await _executions(app, flow_id)
    assert sorted(e.trigger_payload["id"] for e in executions) == ["1", "2"]
    assert all(e.status == "completed" and e.trigger_source == "poll" for e in executions)
    listed = await (await client.get(f"/connect/v1/flows/{flow_id}/triggers", headers=h)).json()
    assert listed[0]["cursor"] == 2 and listed[0]["lastPolledAt"] and listed[0]["lastError"] is None
    cron = await client.get("/api/cron/poll-triggers")
    assert cron.status == 401


async def test_trigger_validation_and_the_active_subscription_cap(client, workspace):
    flows_client, flows_ws = client, workspace  # SQLite only: the storage paths run on both databases elsewhere
    app, h = flows_client.server.app, flows_ws["headers"]
    flow_id = await _flow(flows_client, h, [], publish=False)
    unknown_provider = await flows_client.post(f"/connect/v1/flows/{flow_id}/triggers", json={**LEADGEN, "providerType": "nope"}, headers=h)
    assert unknown_provider.status == 404 and "Provider not found: nope" in (await unknown_provider.json())["message"]
    unknown_trigger = await flows_client.post(
        f"/connect/v1/flows/{flow_id}/triggers", json={**LEADGEN, "triggerName": "no such trigger"}, headers=h
    )  # not an event name
    assert unknown_trigger.status == 400 and "triggerName" in (await unknown_trigger.json())["message"]
    wrong_kind = await flows_client.post(f"/connect/v1/flows/{flow_id}/triggers", json={**LEADGEN, "kind": "poll"}, headers=h)
    assert wrong_kind.status == 400
    other_provider = await add_connection(app, flows_ws["workspace_id"], "slack")
    mismatch = await flows_client.post(f"/connect/v1/flows/{flow_id}/triggers", json={**LEADGEN, "connectionId": other_provider}, headers=h)
    assert mismatch.status == 400
    created = []
    for _ in range(5):  # the free plan allows 5 active trigger subscriptions
        response = await flows_client.post(f"/connect/v1/flows/{flow_id}/triggers", json=LEADGEN, headers=h)
        assert response.status == 201
        created.append((await response.json())["id"])
    capped = await flows_client.post(f"/connect/v1/flows/{flow_id}/triggers", json=LEADGEN, headers=h)
    assert capped.status == 403 and (await capped.json())["message"].startswith("Plan limit exceeded for active_triggers:")
    assert (await flows_client.delete(f"/connect/v1/flows/{flow_id}/triggers/{created[0]}", headers=h)).status == 200
    assert (await flows_client.post(f"/connect/v1/flows/{flow_id}/triggers", json=LEADGEN, headers=h)).status == 201
    options = await (await flows_client.get("/connect/v1/flows/trigger-options", headers=h)).json()
    facebook = next(o for o in options if o["providerType"] == "facebook")
    assert any(t["name"] == "leadgen" and t["kind"] == "webhook" for t in facebook["triggers"])
    async with app[SERVICES].db.session() as session:
        assert await session.scalar(select(func.count()).select_from(FlowTriggerSubscription)) == 5


async def test_records_replay_fires_subscriptions_of_either_kind_by_resource_type(aiohttp_client, make_app, drain_jobs):
    from patchbay.core.flows.triggers import fire_matching_triggers

    plugin = _ItemsPlugin()
    app = make_app(plugins=[plugin])
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    h = ws["headers"]
    connection_id = await add_connection(app, ws["workspace_id"], "hubspot")
    contacts = await _flow(client, h, [{"id": "t", "type": "transform", "output": "{{ trigger.email }}"}], name="contacts")
    deals = await _flow(client, h, [{"id": "t", "type": "transform", "output": 1}], name="deals")
    for flow_id, types in ((contacts, ["contacts"]), (deals, ["deals"])):
        body = {"providerType": "hubspot", "triggerName": "test_items", "kind": "poll", "connectionId": connection_id, "config": {"eventTypes": types}}
        assert (await client.post(f"/connect/v1/flows/{flow_id}/triggers", json=body, headers=h)).status == 201
    async with app[SERVICES].db.transaction() as session:
        fired = await fire_matching_triggers(
            app[SERVICES],
            session,
            workspace_id=ws["workspace_id"],
            provider_type="hubspot",
            event_type="contacts",
            payload={"email": "ada@example.com"},
            source="records",
        )
        webhook_only = await fire_matching_triggers(
            app[SERVICES], session, workspace_id=ws["workspace_id"], provider_type="hubspot", event_type="contacts", payload={}, source="webhook"
        )
    assert (fired, webhook_only) == (1, 0)
    await drain_jobs(app[SERVICES])
    (execution,) = await _executions(app, contacts)
    assert execution.trigger_source == "records" and execution.status == "completed"
    assert await _executions(app, deals) == []
