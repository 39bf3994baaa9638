"""Twilio's incoming message webhook starts the flows subscribed to ``twilio.incoming_message``, and only a
delivery Twilio signed for this deployment's public URL is kept.

Twilio posts a form (https://www.twilio.com/docs/messaging/guides/webhook-request) and signs it with
``X-Twilio-Signature``: the base64 HMAC-SHA1, under the account's Auth Token, of the URL it called followed by
each POST parameter sorted by name, name then value
(https://www.twilio.com/docs/usage/webhooks/webhooks-security). The URL patchbay checks is its configured
``base_url`` and the path and query as sent: a request whose Host header names another URL is checked against
the configured one all the same. Each attack is sent over HTTP and nothing of it is stored."""

from __future__ import annotations

import base64
import hashlib
import hmac
from urllib.parse import parse_qsl, urlencode

import pytest
from sqlalchemy import func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.models import FlowExecution
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.webhooks.models import WebhookEvent
from patchbay.testing import add_connection

AUTH_TOKEN = "twilio-auth-token-0123456789abcdef"
BASE_URL = "https://hooks.example.com/patchbay"  # the public URL given to Twilio, a path prefix included
ACCOUNT = "AC" + "a" * 32
MESSAGE = {
    "MessageSid": "SM" + "b" * 32,
    "SmsSid": "SM" + "b" * 32,
    "AccountSid": ACCOUNT,
    "From": "+14017122661",
    "To": "+15558675310",
    "Body": "Ahoy! Is the 3pm slot free?",
    "NumMedia": "0",
    "NumSegments": "1",
}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def signed(url: str, body: bytes, token: str = AUTH_TOKEN) -> dict[str, str]:
    """The headers Twilio sends with ``body`` posted to ``url``, written from its docs."""
    params = sorted(parse_qsl(body.decode(), keep_blank_values=True))
    text = url + "".join(name + value for name, value in params)
    signature = base64.b64encode(hmac.new(token.encode(), text.encode(), hashlib.sha1).digest()).decode()
    return {**FORM, "X-Twilio-Signature": signature}


async def _app(make_app, aiohttp_client, database_url):
    app = make_app(database_url=database_url, base_url=BASE_URL, providers={"twilio": {"webhook_secret": AUTH_TOKEN}})
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    await add_connection(app, ws["workspace_id"], "twilio", meta={"account_sid": ACCOUNT})
    return app, client, ws


async def _count(app, model) -> int:
    async with app[SERVICES].db.session() as session:
        return await session.scalar(select(func.count()).select_from(model))


@pytest.mark.both_databases
async def test_a_signed_incoming_message_starts_the_flow_subscribed_to_it(aiohttp_client, make_app, database_url, drain_jobs):
    app, client, ws = await _app(make_app, aiohttp_client, database_url)
    h = ws["headers"]
    steps = [{"id": "reply", "type": "transform", "output": {"from": "{{ trigger.From }}", "text": "{{ trigger.Body }}"}}]
    flow = await (await client.post("/connect/v1/flows", json={"name": "on SMS", "steps": steps}, headers=h)).json()
    assert (await client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)).status == 201
    subscribed = await client.post(
        f"/connect/v1/flows/{flow['id']}/triggers", json={"kind": "webhook", "providerType": "twilio", "triggerName": "incoming_message"}, headers=h
    )
    assert subscribed.status == 201, await subscribed.text()
    options = {o["providerType"]: o for o in await (await client.get("/connect/v1/flows/trigger-options", headers=h)).json()}
    offered = {t["name"]: t for t in options["twilio"]["triggers"]}["incoming_message"]
    assert offered["kind"] == "webhook" and offered["eventTypes"] == ["com.twilio.messaging.inbound-message.received"]

    body = urlencode(MESSAGE).encode()
    received = await client.post("/webhook/twilio", data=body, headers=signed(f"{BASE_URL}/webhook/twilio", body))
    assert received.status == 200, await received.text()
    for _ in range(50):  # the inbound pipeline's jobs, then the execution's
        executions = await _all(app, FlowExecution)
        if not await drain_jobs(app[SERVICES]) and executions and {e.status for e in executions} == {"completed"}:
            break
    (event,) = await _all(app, WebhookEvent)
    assert (event.status, event.workspace_id, event.event_type) == ("PROCESSED", ws["workspace_id"], "com.twilio.messaging.inbound-message.received")
    (execution,) = await _all(app, FlowExecution)
    assert execution.status == "completed", execution.error
    assert execution.trigger_source == "webhook" and execution.trigger_payload["MessageSid"] == MESSAGE["MessageSid"]
    run = await (await client.get(f"/connect/v1/flows/{flow['id']}/executions/{execution.id}/steps", headers=h)).json()
    assert run[0]["output"] == {"from": "+14017122661", "text": MESSAGE["Body"]}


async def _all(app, model):
    async with app[SERVICES].db.session() as session:
        return list((await session.scalars(select(model))).all())


async def test_the_signed_url_keeps_its_query(aiohttp_client, make_app, database_url):
    app, client, _ = await _app(make_app, aiohttp_client, database_url)
    body = urlencode(MESSAGE).encode()
    path = "/webhook/twilio?connectionId=conn%201"
    assert (await client.post(path, data=body, headers=signed(f"{BASE_URL}/webhook/twilio", body))).status == 401
    assert (await client.post(path, data=body, headers=signed(f"{BASE_URL}{path}", body))).status == 200


async def test_forged_and_tampered_deliveries_are_refused_and_nothing_is_stored(aiohttp_client, make_app, database_url):
    app, client, _ = await _app(make_app, aiohttp_client, database_url)
    body = urlencode(MESSAGE).encode()
    public = f"{BASE_URL}/webhook/twilio"
    as_received = str(client.make_url("/webhook/twilio"))  # the server's own address, not the configured one
    attacks = {
        "no signature": (body, FORM, {}),
        "signed with another token": (body, signed(public, body, token="not-the-auth-token"), {}),
        "a parameter added after signing": (body + b"&Body=send+me+the+codes", signed(public, body), {}),
        "a parameter changed after signing": (body.replace(b"Ahoy", b"Help"), signed(public, body), {}),
        "signed for the Host header's URL": (body, signed("http://attacker.example/webhook/twilio", body), {"Host": "attacker.example"}),
        "signed for the URL as received": (body, signed(as_received, body), {}),
    }
    for name, (payload, headers, extra) in attacks.items():
        refused = await client.post("/webhook/twilio", data=payload, headers={**headers, **extra})
        assert refused.status == 401, f"{name}: answered {refused.status}"
        assert (await refused.json())["statusCode"] == 401
    assert await _count(app, WebhookEvent) == 0
    # the same body, signed for the configured URL, is kept: the refusals were the signatures'
    assert (await client.post("/webhook/twilio", data=body, headers=signed(public, body))).status == 200
    assert await _count(app, WebhookEvent) == 1
