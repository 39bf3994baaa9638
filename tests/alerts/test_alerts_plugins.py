"""A plugin adds an alert channel with ``register_alert_channels``; the core looks it up by the
subscription's channel name and hands it the alert, the target and the context."""

from __future__ import annotations

from patchbay import hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.testing import drain
from patchbay.core.testing import create_workspace_with_key


class PagerPlugin:
    def __init__(self):
        self.sent = []

    @hookimpl
    def register_alert_channels(self, register):
        plugin = self

        class Pager:
            async def send(self, alert, target, context):
                plugin.sent.append((alert, target, context.smtp.sender, callable(context.check)))

        register("pager", Pager())


async def test_a_plugin_channel_receives_alerts(aiohttp_client, make_app):
    plugin = PagerPlugin()
    client = await aiohttp_client(make_app(plugins=[plugin]))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    h = ws["headers"]
    created = await client.post(
        "/connect/v1/alerts", json={"channel": "pager", "target": "https://pager.example.com/team", "eventTypes": ["flow.succeeded"]}, headers=h
    )
    assert created.status == 201
    flow = await (await client.post("/connect/v1/flows", json={"name": "Paged", "steps": [{"id": "t", "type": "transform", "output": 1}]}, headers=h)).json()
    await client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES], session, [{"workspace_id": ws["workspace_id"], "flow_id": flow["id"], "version": 1, "trigger_source": "schedule"}]
        )
    await drain(app[SERVICES])
    ((alert, target, sender, has_check),) = plugin.sent
    assert alert["event"] == "flow.succeeded" and alert["executionId"] == execution_id and alert["flowName"] == "Paged"
    assert target == "https://pager.example.com/team" and sender and has_check
