"""Alerts (spec 4.11, 6.1): subscriptions over HTTP, and delivery after live runs to a local webhook
receiver, a chat incoming webhook and a local SMTP server, through the job queue."""

from __future__ import annotations

import asyncio
import json

import pytest
from sqlalchemy import func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.testing import drain as drain_jobs
from patchbay.core.jobs.models import Job
from patchbay.core.settings import SmtpSettings
from patchbay.core.testing import create_workspace_with_key


async def _run_live(app, client, h, workspace_id, steps, drain_jobs, payload=None):
    flow = await (await client.post("/connect/v1/flows", json={"name": "Nightly sync", "steps": steps}, headers=h)).json()
    await client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES],
            session,
            [{"workspace_id": workspace_id, "flow_id": flow["id"], "version": 1, "trigger_source": "webhook", "trigger_payload": payload or {}}],
        )
    await drain_jobs(app[SERVICES])
    return flow["id"], execution_id


FAILING = [{"id": "boom", "type": "transform", "output": "{{ trigger.missing }}"}]
PASSING = [{"id": "ok", "type": "transform", "output": 1}]


async def test_webhook_and_chat_alerts_reach_their_targets(aiohttp_client, make_app, database_url, receiver):
    client = await aiohttp_client(make_app(database_url=database_url))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    h = ws["headers"]
    for channel, path, events in (("webhook", "/alerts", ["flow.failed"]), ("chat", "/chat", ["flow.failed", "flow.succeeded"])):
        response = await client.post("/connect/v1/alerts", json={"channel": channel, "target": receiver.url + path, "eventTypes": events}, headers=h)
        assert response.status == 201
    flow_id, execution_id = await _run_live(app, client, h, ws["workspace_id"], FAILING, drain_jobs)
    by_path = {r["path"]: r for r in receiver.requests}
    alert = json.loads(by_path["/alerts"]["body"])
    assert set(alert) == {"event", "timestamp", "flowId", "flowName", "error", "executionId"}
    assert alert["event"] == "flow.failed" and alert["flowId"] == flow_id and alert["executionId"] == execution_id
    assert alert["flowName"] == "Nightly sync" and "missing" in alert["error"] and alert["timestamp"].endswith("Z")
    chat = json.loads(by_path["/chat"]["body"])
    assert chat["text"].startswith("\u274c") and "Nightly sync" in chat["text"] and "missing" in chat["text"]
    receiver.requests.clear()
    await _run_live(app, client, h, ws["workspace_id"], PASSING, drain_jobs)
    assert [r["path"] for r in receiver.requests] == ["/chat"]  # the webhook target wants failures only
    assert json.loads(receiver.requests[0]["body"])["text"].startswith("\u2705")


async def test_email_alerts_go_through_smtp(aiohttp_client, make_app, smtp_server):
    port, mailbox = smtp_server
    client = await aiohttp_client(make_app(smtp=SmtpSettings(host="127.0.0.1", port=port, sender="alerts@patchbay.test")))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    h = ws["headers"]
    assert (
        await client.post("/connect/v1/alerts", json={"channel": "email", "target": "ops@example.com", "eventTypes": ["flow.failed"]}, headers=h)
    ).status == 201
    _, execution_id = await _run_live(app, client, h, ws["workspace_id"], FAILING, drain_jobs)
    await asyncio.wait_for(mailbox.arrived.wait(), 10)
    ((recipients, message),) = mailbox.messages
    assert recipients == ["ops@example.com"] and message["From"] == "alerts@patchbay.test"
    assert "Nightly sync" in message["Subject"] and "failed" in message["Subject"]
    body = message.get_payload(decode=True).decode()
    assert execution_id in body and "missing" in body


async def test_an_unreachable_target_is_retried_by_the_queue(aiohttp_client, make_app):
    client = await aiohttp_client(make_app())
    app = client.server.app
    ws = await create_workspace_with_key(app)
    h = ws["headers"]
    await client.post("/connect/v1/alerts", json={"channel": "webhook", "target": "http://127.0.0.1:9/x", "eventTypes": ["flow.failed"]}, headers=h)
    with pytest.raises(Exception):  # noqa: B017 - the channel raises whatever its transport raised; drain runs handlers bare
        await _run_live(app, client, h, ws["workspace_id"], FAILING, drain_jobs)
    async with app[SERVICES].db.session() as session:
        assert await session.scalar(select(func.count()).select_from(Job).where(Job.kind == "alerts.deliver")) == 1


async def test_alert_routes_validate_toggle_and_scope(aiohttp_client, make_app, receiver):
    client = await aiohttp_client(make_app())
    app = client.server.app
    ws = await create_workspace_with_key(app)
    h = ws["headers"]
    for body, word in (
        ({"channel": "pager", "target": "x"}, "channel"),
        ({"channel": "email", "target": "not-an-email"}, "email"),
        ({"channel": "webhook", "target": "ftp://x"}, "target"),
        ({"channel": "webhook", "target": receiver.url, "eventTypes": ["flow.maybe"]}, "eventTypes"),
    ):
        response = await client.post("/connect/v1/alerts", json=body, headers=h)
        assert response.status == 400 and word in (await response.json())["message"]
    created = await (
        await client.post("/connect/v1/alerts", json={"channel": "webhook", "target": receiver.url, "eventTypes": ["flow.failed"]}, headers=h)
    ).json()
    assert created["isActive"] is True and created["eventTypes"] == ["flow.failed"]
    off = await (await client.patch(f"/connect/v1/alerts/{created['id']}", json={"isActive": False}, headers=h)).json()
    assert off["isActive"] is False
    await _run_live(app, client, h, ws["workspace_id"], FAILING, drain_jobs)
    assert receiver.requests == []
    on = await (await client.patch(f"/connect/v1/alerts/{created['id']}", json={"isActive": True}, headers=h)).json()
    assert on["isActive"] is True
    await _run_live(app, client, h, ws["workspace_id"], FAILING, drain_jobs)
    assert len(receiver.requests) == 1
    viewer = await create_workspace_with_key(app, name="V", permissions=["alerts.view"])
    assert (await client.get("/connect/v1/alerts", headers=viewer["headers"])).status == 200
    assert await (await client.get("/connect/v1/alerts", headers=viewer["headers"])).json() == []
    assert (await client.post("/connect/v1/alerts", json={"channel": "email", "target": "a@b.co"}, headers=viewer["headers"])).status == 403
    assert (await client.patch(f"/connect/v1/alerts/{created['id']}", json={"isActive": False}, headers=viewer["headers"])).status == 403
    other = await create_workspace_with_key(app, name="O")
    assert (await client.delete(f"/connect/v1/alerts/{created['id']}", headers=other["headers"])).status == 404
    assert (await client.delete(f"/connect/v1/alerts/{created['id']}", headers=h)).status == 200
    assert await (await client.get("/connect/v1/alerts", headers=h)).json() == []


async def test_an_email_alert_without_smtp_is_refused_up_front(aiohttp_client, make_app):
    client = await aiohttp_client(make_app())
    ws = await create_workspace_with_key(client.server.app)
    response = await client.post("/connect/v1/alerts", json={"channel": "email", "target": "ops@example.com"}, headers=ws["headers"])
    assert response.status == 400
    assert "[smtp] host" in (await response.json())["message"]
    assert await (await client.get("/connect/v1/alerts", headers=ws["headers"])).json() == []
