"""Every attempt of one outbound delivery carries the same bytes, signed over them, under the same
id, on SQLite and PostgreSQL: a forwarded event (whose payload a JSONB column would give back with
its keys in another order), a connection event, a redelivery asked through the API, and a delivery
queued before its bytes were stored. A local receiver refuses the first attempt and accepts the
second; the raw bodies and signatures of both are compared, and verified with the official
Standard Webhooks library."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from standardwebhooks.webhooks import Webhook

from patchbay.core.appkeys import SERVICES
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.webhooks.delivery import DELIVER_JOB
from patchbay.core.webhooks.models import WebhookDelivery
from patchbay.core.webhooks.signing import generate_secret
from patchbay.providers.meta.testing import meta_signature, page_event_payload
from patchbay.testing import add_connection

APP_SECRET = "meta-app-secret"
#: keys out of alphabetical (and of JSONB's length-first) order, nested objects and lists, non-ASCII
VALUE = {"zulu": 1, "alpha": {"yankee": [{"x-ray": True, "bravo": None}], "charlie": "é ✓"}, "mike": {"november": {"oscar": 2.5, "golf": "g"}}}


async def _app(wh_app, aiohttp_client, database_url):
    client = await aiohttp_client(wh_app(database_url=database_url))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    return client, app, ws


async def _subscribe(client, ws, receiver, secret: str, provider: str = "facebook") -> dict:
    body = {"callbackUrl": receiver.url, "eventType": "*", "callbackSecret": secret}
    created = await client.post(f"/connect/v1/webhooks/{provider}/subscribe", json=body, headers=ws["headers"])
    assert created.status == 201, await created.text()
    return await created.json()


async def _forward(client, value: dict) -> str:
    body = json.dumps(page_event_payload("page-A", value=value)).encode()
    response = await client.post("/webhook/facebook", data=body, headers={"x-hub-signature-256": meta_signature(APP_SECRET, body)})
    assert response.status == 200
    return (await response.json())["id"]


async def _deliveries(client, ws, helpers, event_id: str, count: int) -> list[dict]:
    """The event's ``count`` deliveries once each has ended, oldest first."""

    async def ended():
        listed = (await (await client.get("/connect/v1/webhooks/deliveries", params={"eventId": event_id}, headers=ws["headers"])).json())["data"]
        done = [d for d in listed if d["status"] != "pending"]
        return sorted(done, key=lambda d: d["createdAt"]) if len(done) == count else None

    return await helpers.wait_until(ended, timeout=20)


def assert_one_message(requests: list[dict], secret: str, message_id: str) -> bytes:
    """The attempts in ``requests`` are one message: the same raw body, the same id in both
    headers, the same ``X-Connect-Signature`` (recomputed over the raw body) and a Standard
    Webhooks signature the official library accepts. Answers the body."""
    assert len(requests) >= 2
    bodies = [request["body"] for request in requests]
    assert all(body == bodies[0] for body in bodies), bodies
    for request in requests:
        headers = request["headers"]
        assert headers["X-Connect-Delivery"] == headers["webhook-id"] == message_id
        assert headers["X-Connect-Signature"] == hmac.new(secret.encode(), bodies[0], hashlib.sha256).hexdigest()
        standard = {k.lower(): v for k, v in headers.items() if k.lower().startswith("webhook-")}
        assert Webhook(secret).verify(request["body"], standard)["id"] == message_id
    return bodies[0]


@pytest.mark.both_databases
@pytest.mark.slow  # about 2 s (setup and call)
async def test_every_attempt_of_a_forwarded_event_carries_the_same_bytes(wh_app, aiohttp_client, receivers, helpers, database_url):
    secret = generate_secret()
    receiver = await receivers([503, 200])
    client, app, ws = await _app(wh_app, aiohttp_client, database_url)
    await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    await _subscribe(client, ws, receiver, secret)
    event_id = await _forward(client, VALUE)
    (delivery,) = await _deliveries(client, ws, helpers, event_id, 1)
    assert delivery["status"] == "succeeded" and [a["statusCode"] for a in delivery["attemptLog"]] == [503, 200]
    body = assert_one_message(receiver.requests, secret, event_id)
    assert json.loads(body)["data"] == {"page_id": "page-A", **VALUE}


async def test_every_attempt_of_a_connection_event_carries_the_same_bytes(wh_app, aiohttp_client, receivers, helpers, database_url):
    secret = generate_secret()
    receiver = await receivers([503, 200])
    client, app, ws = await _app(wh_app, aiohttp_client, database_url)
    connection_id = await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    await _subscribe(client, ws, receiver, secret)
    assert (await client.delete(f"/connect/v1/connections/{connection_id}", headers=ws["headers"])).status == 200
    await receiver.wait_for(2)
    event_id = receiver.requests[0]["headers"]["webhook-id"]
    (delivery,) = await _deliveries(client, ws, helpers, event_id, 1)
    assert delivery["status"] == "succeeded" and delivery["attempts"] == 2
    body = json.loads(assert_one_message(receiver.requests, secret, event_id))
    assert body["event"] == "connection.removed" and body["data"] == {"connectionId": connection_id, "endUserId": None, "deleted": True}


async def test_a_redelivery_from_the_api_sends_the_bytes_of_the_first_delivery_on_every_attempt(wh_app, aiohttp_client, receivers, helpers, database_url):
    secret = generate_secret()
    receiver = await receivers([200, 503, 200])  # the first delivery is accepted; the redelivery refused once
    client, app, ws = await _app(wh_app, aiohttp_client, database_url)
    await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    await _subscribe(client, ws, receiver, secret)
    event_id = await _forward(client, VALUE)
    await _deliveries(client, ws, helpers, event_id, 1)
    redelivered = await client.post(f"/connect/v1/webhooks/events/{event_id}/redeliver", headers=ws["headers"])
    assert redelivered.status == 201, await redelivered.text()
    first, again = await _deliveries(client, ws, helpers, event_id, 2)
    assert again["manual"] is True and again["status"] == "succeeded" and [a["statusCode"] for a in again["attemptLog"]] == [503, 200]
    assert len(receiver.requests) == 3
    assert_one_message(receiver.requests[1:], secret, event_id)  # the redelivery's two attempts
    assert_one_message(receiver.requests, secret, event_id)  # and the first delivery's: one id, one body


@pytest.mark.both_databases
@pytest.mark.slow  # about 2 s (setup and call)
async def test_a_delivery_queued_without_its_bytes_keeps_the_bytes_of_its_first_attempt(wh_app, aiohttp_client, receivers, helpers, database_url):
    """A delivery created by the previous release (during a rolling upgrade) has no stored bytes:
    each of its attempts serializes the event as read from the database, the same each time."""
    secret = generate_secret()
    receiver = await receivers([200, 503, 200])
    client, app, ws = await _app(wh_app, aiohttp_client, database_url)
    await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    subscription = await _subscribe(client, ws, receiver, secret)
    event_id = await _forward(client, VALUE)
    await _deliveries(client, ws, helpers, event_id, 1)
    async with app[SERVICES].db.transaction() as session:  # a delivery as the previous release queues it
        delivery = WebhookDelivery(workspace_id=ws["workspace_id"], event_id=event_id, subscription_id=subscription["subscriptionId"], manual=True)
        session.add(delivery)
        await session.flush()
        app[SERVICES].jobs.enqueue(session, DELIVER_JOB, {"delivery_id": delivery.id, "attempt": 1}, workspace_id=ws["workspace_id"])
    _, again = await _deliveries(client, ws, helpers, event_id, 2)
    assert again["status"] == "succeeded" and [a["statusCode"] for a in again["attemptLog"]] == [503, 200]
    assert len(receiver.requests) == 3
    assert_one_message(receiver.requests[1:], secret, event_id)


async def test_a_payload_with_a_lone_surrogate_is_forwarded_escaped(wh_app, aiohttp_client, receivers, helpers, sqlite_url):
    """UTF-8 cannot carry the text ``"\\ud800"`` that a provider may send: the delivery's bytes keep
    it escaped (PostgreSQL's JSONB refuses such a payload before any delivery exists)."""
    secret = generate_secret()
    receiver = await receivers([503, 200])
    client, app, ws = await _app(wh_app, aiohttp_client, sqlite_url)
    await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    await _subscribe(client, ws, receiver, secret)
    body = json.dumps(page_event_payload("page-A", value={"note": "\ud800", "name": "é"})).encode()
    response = await client.post("/webhook/facebook", data=body, headers={"x-hub-signature-256": meta_signature(APP_SECRET, body)})
    event_id = (await response.json())["id"]
    (delivery,) = await _deliveries(client, ws, helpers, event_id, 1)
    assert delivery["status"] == "succeeded"
    forwarded = assert_one_message(receiver.requests, secret, event_id)
    assert b'"note":"\\ud800"' in forwarded and json.loads(forwarded)["data"]["name"] == "é"
