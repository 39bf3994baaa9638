"""Any verified inbound event starts a flow: a provider's event names (Stripe's ``customer.created``)
and the generic ``webhook.received`` trigger with its filter (provider, event types, field match).

Stripe signs ``Stripe-Signature: t=<unix time>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`` with the
endpoint's secret (https://stripe.com/docs/webhooks#verify-manually; the scheme as Stripe's own
library computes it: https://www.rubydoc.info/gems/stripe/Stripe/Webhook/Signature); an event is
``{id, object: "event", type, data: {object}}``."""

from __future__ import annotations

import json
import time

import pytest
from sqlalchemy import select

from patchbay import hmac_sha256_hex
from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.models import FlowExecution
from patchbay.core.testing import create_workspace_with_key
from patchbay.testing import add_connection

SECRET = "whsec_test_secret"


def _stripe_signed(body: bytes) -> dict[str, str]:
    timestamp = int(time.time())
    signature = hmac_sha256_hex(SECRET, f"{timestamp}.".encode() + body)
    return {"Stripe-Signature": f"t={timestamp},v1={signature}", "Content-Type": "application/json"}


async def _flow(client, h, name):
    steps = [{"id": "who", "type": "transform", "output": {"type": "{{ trigger.type }}", "email": "{{ trigger.data.object.email }}"}}]
    flow = await (await client.post("/connect/v1/flows", json={"name": name, "steps": steps}, headers=h)).json()
    assert (await client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)).status == 201
    return flow["id"]


async def _subscribe(client, h, flow_id, body):
    response = await client.post(f"/connect/v1/flows/{flow_id}/triggers", json={"kind": "webhook", **body}, headers=h)
    assert response.status == 201, await response.text()


async def _executions(app):
    async with app[SERVICES].db.session() as session:
        return list((await session.scalars(select(FlowExecution).order_by(FlowExecution.created_at))).all())


@pytest.mark.both_databases
async def test_a_stripe_signed_event_starts_the_flows_subscribed_to_it(aiohttp_client, make_app, database_url, drain_jobs):
    app = make_app(database_url=database_url, providers={"stripe": {"webhook_secret": SECRET}})
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    h = ws["headers"]
    connection_id = await add_connection(app, ws["workspace_id"], "stripe")
    by_name = await _flow(client, h, "by event name")
    await _subscribe(client, h, by_name, {"providerType": "stripe", "triggerName": "customer.created"})
    any_provider = await _flow(client, h, "any provider, filtered")
    await _subscribe(
        client,
        h,
        any_provider,
        {"providerType": "*", "triggerName": "webhook.received", "config": {"eventTypes": ["customer.created"], "match": {"data.object.currency": "usd"}}},
    )
    other_currency = await _flow(client, h, "another currency")
    await _subscribe(
        client, h, other_currency, {"providerType": "stripe", "triggerName": "webhook.received", "config": {"match": {"data.object.currency": "eur"}}}
    )
    other_event = await _flow(client, h, "another event")
    await _subscribe(client, h, other_event, {"providerType": "stripe", "triggerName": "invoice.paid"})

    event = {
        "id": "evt_1",
        "object": "event",
        "type": "customer.created",
        "data": {"object": {"id": "cus_1", "object": "customer", "email": "ada@example.com", "currency": "usd"}},
    }
    body = json.dumps(event).encode()
    unsigned = await client.post(f"/webhook/stripe?connectionId={connection_id}", data=body, headers={"Content-Type": "application/json"})
    assert unsigned.status == 401
    received = await client.post(f"/webhook/stripe?connectionId={connection_id}", data=body, headers=_stripe_signed(body))
    assert received.status == 200, await received.text()
    for _ in range(50):  # the inbound pipeline's jobs, then the executions' jobs
        if not await drain_jobs(app[SERVICES]) and {e.status for e in await _executions(app)} == {"completed"}:
            break
    started = {e.flow_id: e for e in await _executions(app)}
    assert set(started) == {by_name, any_provider}
    for execution in started.values():
        assert execution.status == "completed" and execution.trigger_source == "webhook" and execution.trigger_payload["id"] == "evt_1"
    steps = await (await client.get(f"/connect/v1/flows/{by_name}/executions/{started[by_name].id}/steps", headers=h)).json()
    assert steps[0]["output"] == {"type": "customer.created", "email": "ada@example.com"}


async def test_which_inbound_triggers_are_accepted(aiohttp_client, make_app):
    app = make_app(providers={"stripe": {"webhook_secret": SECRET}})
    client = await aiohttp_client(app)
    h = (await create_workspace_with_key(app))["headers"]
    flow = await (await client.post("/connect/v1/flows", json={"name": "f", "steps": []}, headers=h)).json()
    url = f"/connect/v1/flows/{flow['id']}/triggers"

    async def answer(body):
        response = await client.post(url, json=body, headers=h)
        return response.status, (await response.json()).get("message", "")

    assert (await answer({"providerType": "stripe", "triggerName": "customer.created", "kind": "poll"}))[0] == 400
    status, message = await answer({"providerType": "notion", "triggerName": "page.created"})
    assert status == 400 and "no verified inbound webhooks" in message
    status, message = await answer({"providerType": "*", "triggerName": "customer.created"})
    assert status == 400 and "webhook.received" in message
    status, message = await answer({"providerType": "stripe", "triggerName": "webhook.received", "config": {"match": {"data.[": 1}}})
    assert status == 400 and "config.match" in message
    status, message = await answer({"providerType": "stripe", "triggerName": "webhook.received", "config": {"eventTypes": "customer.created"}})
    assert status == 400 and "config.eventTypes" in message
    assert (await answer({"providerType": "stripe", "triggerName": "customer.created"}))[0] == 201
    assert (await answer({"providerType": "stripe", "triggerName": "webhook.received"}))[0] == 201
    options = {o["providerType"]: o for o in await (await client.get("/connect/v1/flows/trigger-options", headers=h)).json()}
    stripe = {t["name"]: t for t in options["stripe"]["triggers"]}
    assert stripe["webhook.received"]["kind"] == "webhook" and "match" in stripe["webhook.received"]["config"]["properties"]
    assert "new_charge" in stripe  # its poll triggers stay
