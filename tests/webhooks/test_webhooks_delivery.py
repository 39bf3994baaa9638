"""Outbound subscriptions and forwarding: both field sets, signatures a receiver can recompute,
retries with every attempt logged, 429/410, disabling, the long-tail schedule, secret rotation,
redelivery."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest
from sqlalchemy import select, text

from patchbay.core.appkeys import SERVICES
from patchbay.core.settings import WebhooksSettings
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.webhooks.delivery import next_delay, parse_retry_after
from patchbay.core.webhooks.models import WebhookDelivery, WebhookSubscription
from patchbay.core.webhooks.signing import generate_secret, signature_headers, standard_key
from patchbay.providers.meta.testing import meta_signature, page_event_payload
from patchbay.testing import add_connection

APP_SECRET = "meta-app-secret"
CALLBACK_SECRET = "customer-callback-secret"


async def send(client, page="page-A", **value):
    body = json.dumps(page_event_payload(page, value=value)).encode()
    response = await client.post("/webhook/facebook", data=body, headers={"x-hub-signature-256": meta_signature(APP_SECRET, body)})
    assert response.status == 200
    return (await response.json())["id"]


async def setup_workspace(wh, receiver, **subscription):
    client, app, first, _ = wh
    await add_connection(app, first["workspace_id"], "facebook", meta={"page_id": "page-A"})
    body = {"callbackUrl": receiver.url, "eventType": "*", "callbackSecret": CALLBACK_SECRET, **subscription}
    created = await client.post("/connect/v1/webhooks/facebook/subscribe", json=body, headers=first["headers"])
    assert created.status == 201, await created.text()
    return client, app, first, await created.json()


async def delivery_of(client, ws, event_id, helpers, final=("succeeded", "failed", "gone")):
    async def done():
        listed = await (await client.get("/connect/v1/webhooks/deliveries", params={"eventId": event_id}, headers=ws["headers"])).json()
        return listed["data"][0] if listed["data"] and listed["data"][0]["status"] in final else None

    return await helpers.wait_until(done, timeout=20)


def standard_webhooks_valid(secret: str, headers: dict, body: bytes) -> bool:
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = "v1," + base64.b64encode(hmac.new(secret.encode(), signed, hashlib.sha256).digest()).decode()
    return expected in headers["webhook-signature"].split(" ")


@pytest.mark.slow  # about 1 s (setup and call)
async def test_receiver_failing_twice_then_succeeding_gets_three_signed_attempts(wh, receivers, helpers):
    receiver = await receivers([500, 502, 200])
    client, app, ws, subscription = await setup_workspace(wh, receiver)
    event_id = await send(client, note="hello")
    delivery = await delivery_of(client, ws, event_id, helpers)
    assert delivery["status"] == "succeeded" and delivery["attempts"] == 3
    assert [(a["attempt"], a["statusCode"]) for a in delivery["attemptLog"]] == [(1, 500), (2, 502), (3, 200)]
    assert delivery["attemptLog"][0]["responseExcerpt"] == "answer 1" and all(a["durationMs"] >= 0 for a in delivery["attemptLog"])
    assert len(receiver.requests) == 3
    for request in receiver.requests:
        headers, raw = request["headers"], request["body"]
        # the receiver recomputes the HMAC over the raw body
        assert headers["X-Connect-Signature"] == hmac.new(CALLBACK_SECRET.encode(), raw, hashlib.sha256).hexdigest()
        assert standard_webhooks_valid(CALLBACK_SECRET, headers, raw)
        assert headers["X-Connect-Event"] == "feed" and headers["X-Connect-Provider"] == "facebook"
        assert headers["X-Connect-Delivery"] == event_id == headers["webhook-id"]
        forwarded = json.loads(raw)
        assert set(forwarded) == {"id", "event", "provider", "workspaceId", "timestamp", "data"}
        assert forwarded["id"] == event_id and forwarded["workspaceId"] == ws["workspace_id"] and forwarded["data"]["note"] == "hello"
        assert forwarded["timestamp"].endswith("Z")


@pytest.mark.slow  # about 2 s (setup and call)
async def test_receiver_failing_every_time_gets_four_attempts_then_the_delivery_fails(wh, receivers, helpers):
    receiver = await receivers([503])
    client, app, ws, _ = await setup_workspace(wh, receiver)
    event_id = await send(client)
    delivery = await delivery_of(client, ws, event_id, helpers)
    assert delivery["status"] == "failed" and delivery["attempts"] == 4
    assert [a["statusCode"] for a in delivery["attemptLog"]] == [503, 503, 503, 503]
    assert len(receiver.requests) == 4
    event = await (await client.get(f"/connect/v1/webhooks/events/{event_id}", headers=ws["headers"])).json()
    assert event["deliveries"][0]["attempts"] == 4 and len(event["deliveries"][0]["attemptLog"]) == 4


@pytest.mark.slow  # about 2 s (setup and call)
async def test_unreachable_endpoint_is_retried_and_logged(wh, receivers, helpers):
    receiver = await receivers()
    client, app, ws, subscription = await setup_workspace(wh, receiver)
    await receiver.close()  # nothing listens there any more
    event_id = await send(client)
    delivery = await delivery_of(client, ws, event_id, helpers)
    assert delivery["status"] == "failed" and delivery["attempts"] == 4
    assert all(a["statusCode"] is None and a["error"] for a in delivery["attemptLog"])


def test_waits_start_at_one_second_and_grow_to_fifteen():
    settings = WebhooksSettings()
    waits = [next_delay(settings, long_tail=False, attempt=n, status=500, retry_after=None) for n in (1, 2, 3, 4)]
    assert waits == [1.0, 4.0, 15.0, None]
    long_tail = [next_delay(settings, long_tail=True, attempt=n, status=500, retry_after=None) for n in range(4, 10)]
    assert long_tail == [300.0, 1800.0, 7200.0, 18000.0, 36000.0, None]
    assert next_delay(settings, long_tail=False, attempt=1, status=429, retry_after="30") == 30.0
    assert next_delay(settings, long_tail=False, attempt=1, status=429, retry_after="999999") == 3600.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after("soon") is None


@pytest.mark.slow  # about 1 s (setup and call)
async def test_429_retry_after_is_honoured(wh, receivers, helpers):
    receiver = await receivers([429, 200], headers_for=lambda n: {"Retry-After": "1"} if n == 1 else {})
    client, app, ws, _ = await setup_workspace(wh, receiver)
    event_id = await send(client)
    delivery = await delivery_of(client, ws, event_id, helpers)
    assert delivery["status"] == "succeeded" and delivery["attempts"] == 2
    first, second = receiver.requests
    assert second["at"] - first["at"] >= 0.95  # the fast schedule alone would wait 20 ms


async def test_410_stops_and_disables_the_subscription(wh, receivers, helpers):
    receiver = await receivers([410])
    client, app, ws, subscription = await setup_workspace(wh, receiver)
    event_id = await send(client)
    delivery = await delivery_of(client, ws, event_id, helpers)
    assert delivery["status"] == "gone" and delivery["attempts"] == 1
    listed = await (await client.get("/connect/v1/webhooks/facebook/subscriptions", headers=ws["headers"])).json()
    assert listed == []
    everything = await (await client.get("/connect/v1/webhooks/facebook/subscriptions?all=true", headers=ws["headers"])).json()
    assert everything[0]["isActive"] is False and "410" in everything[0]["disabledReason"]


@pytest.mark.slow  # about 2 s (setup and call)
async def test_a_subscription_failing_past_the_period_is_disabled_and_can_be_re_enabled(wh_app, aiohttp_client, receivers, helpers, fast_webhooks, caplog):
    fast_webhooks.disable_after_minutes = 0
    client = await aiohttp_client(wh_app(webhooks=fast_webhooks))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    receiver = await receivers([500, 500, 500, 500, 200])
    await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    sub = await (await client.post("/connect/v1/webhooks/facebook/subscribe", json={"url": receiver.url}, headers=ws["headers"])).json()
    event_id = await send(client)
    delivery = await delivery_of(client, ws, event_id, helpers)
    assert delivery["status"] == "failed"
    async with app[SERVICES].db.session() as session:
        row = await session.get(WebhookSubscription, sub["subscriptionId"])
    assert row.is_active is False and "failed since" in row.disabled_reason
    assert any("ALERT" in r.message and sub["subscriptionId"] in r.message for r in caplog.records)
    # a disabled subscription gets nothing
    await send(client, n=2)
    await helpers.wait_until(lambda: _settled(app))
    assert len(receiver.requests) == 4
    enabled = await client.patch(f"/connect/v1/webhooks/facebook/subscribe/{sub['subscriptionId']}", json={"isActive": True}, headers=ws["headers"])
    assert (await enabled.json())["isActive"] is True
    event_id = await send(client, n=3)
    assert (await delivery_of(client, ws, event_id, helpers))["status"] == "succeeded"


async def _settled(app):
    from patchbay.core.webhooks.models import WebhookEvent

    async with app[SERVICES].db.session() as session:
        return not (await session.scalars(select(WebhookEvent).where(WebhookEvent.status == "RECEIVED"))).first()


@pytest.mark.slow  # about 3 s (setup and call)
async def test_long_tail_schedule_keeps_trying_after_the_fast_retries(wh, receivers, helpers):
    receiver = await receivers([500, 500, 500, 500, 500, 200])
    client, app, ws, _ = await setup_workspace(wh, receiver, longTailRetries=True)
    event_id = await send(client)
    delivery = await delivery_of(client, ws, event_id, helpers)
    assert delivery["status"] == "succeeded" and delivery["attempts"] == 6


async def test_secret_rotation_signs_with_both_secrets_during_the_overlap(wh, receivers, helpers):
    receiver = await receivers()
    client, app, ws, sub = await setup_workspace(wh, receiver)
    rotated = await client.post(
        f"/connect/v1/webhooks/facebook/subscribe/{sub['subscriptionId']}/rotate-secret", json={"callbackSecret": "the-new-secret-123"}, headers=ws["headers"]
    )
    assert rotated.status == 201
    assert (await rotated.json())["previousSecretExpiresAt"] is not None
    event_id = await send(client)
    await delivery_of(client, ws, event_id, helpers)
    headers, raw = receiver.requests[0]["headers"], receiver.requests[0]["body"]
    assert headers["X-Connect-Signature"] == hmac.new(b"the-new-secret-123", raw, hashlib.sha256).hexdigest()
    assert headers["X-Connect-Signature-Previous"] == hmac.new(CALLBACK_SECRET.encode(), raw, hashlib.sha256).hexdigest()
    assert len(headers["webhook-signature"].split(" ")) == 2
    assert standard_webhooks_valid("the-new-secret-123", headers, raw) and standard_webhooks_valid(CALLBACK_SECRET, headers, raw)
    # without overlap the old secret stops at once; a generated secret is whsec_ and shown once
    again = await (
        await client.post(f"/connect/v1/webhooks/facebook/subscribe/{sub['subscriptionId']}/rotate-secret", json={"overlapSeconds": 0}, headers=ws["headers"])
    ).json()
    assert again["callbackSecret"].startswith("whsec_") and again["previousSecretExpiresAt"] is None


async def test_both_field_sets_and_event_type_filtering(wh, receivers, helpers):
    client, app, ws, _ = wh
    await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    leads_only, everything = await receivers(), await receivers()
    first = await client.post("/connect/v1/webhooks/facebook/subscribe", json={"url": leads_only.url, "events": ["leadgen"]}, headers=ws["headers"])
    second = await client.post(
        "/connect/v1/webhooks/facebook/subscribe",
        json={"callbackUrl": everything.url, "eventType": "*", "callbackSecret": CALLBACK_SECRET},
        headers=ws["headers"],
    )
    assert first.status == second.status == 201
    a, b = await first.json(), await second.json()
    assert {"subscriptionId", "url", "createdAt"} <= set(a) and a["events"] == ["leadgen"] and a["signed"] is False
    assert b["url"] == everything.url and b["events"] == ["*"] and b["signed"] is True
    listed = await (await client.get("/connect/v1/webhooks/facebook/subscriptions", headers=ws["headers"])).json()
    assert {s["subscriptionId"] for s in listed} == {a["subscriptionId"], b["subscriptionId"]}
    event_id = await send(client)  # a "feed" event
    await delivery_of(client, ws, event_id, helpers)
    assert len(everything.requests) == 1 and leads_only.requests == []
    assert "X-Connect-Signature" not in (await _unsigned_headers(client, ws, leads_only, helpers))
    deleted = await client.delete(f"/connect/v1/webhooks/facebook/subscribe/{a['subscriptionId']}", headers=ws["headers"])
    assert (await deleted.json()) == {"success": True}
    assert (await client.delete(f"/connect/v1/webhooks/facebook/subscribe/{a['subscriptionId']}", headers=ws["headers"])).status == 404


async def _unsigned_headers(client, ws, receiver, helpers):
    """Send an event the leads-only subscription takes, without a secret: no signature headers."""
    await client.patch(f"/connect/v1/webhooks/facebook/subscribe/{(await _sub_for(client, ws, receiver))}", json={"events": ["*"]}, headers=ws["headers"])
    event_id = await send(client, n=2)
    await receiver.wait_for(1)
    await delivery_of(client, ws, event_id, helpers)
    headers = receiver.requests[0]["headers"]
    assert "webhook-id" in headers and "webhook-signature" not in headers
    return headers


async def _sub_for(client, ws, receiver):
    listed = await (await client.get("/connect/v1/webhooks/facebook/subscriptions", headers=ws["headers"])).json()
    return next(s["subscriptionId"] for s in listed if s["url"] == receiver.url)


@pytest.mark.parametrize(
    "body, field",
    [
        ({"events": ["*"]}, "url"),
        ({"url": "ftp://x"}, "url"),
        ({"callbackUrl": 3}, "callbackUrl"),
        ({"url": "http://127.0.0.1/x", "events": "leadgen"}, "events"),
        ({"url": "http://127.0.0.1/x", "callbackSecret": "short"}, "callbackSecret"),
    ],
)
async def test_invalid_subscriptions_are_400_naming_the_field(wh, body, field):
    client, _, ws, _ = wh
    response = await client.post("/connect/v1/webhooks/facebook/subscribe", json=body, headers=ws["headers"])
    assert response.status == 400
    assert field in (await response.json())["message"]


async def test_private_callback_urls_are_refused_without_the_insecure_setting(wh_app, aiohttp_client):
    client = await aiohttp_client(wh_app(background=False, allow_insecure_targets=False))
    ws = await create_workspace_with_key(client.server.app)
    for url in ("http://example.com/hook", "https://127.0.0.1/hook", "https://10.0.0.8/hook"):
        response = await client.post("/connect/v1/webhooks/facebook/subscribe", json={"url": url}, headers=ws["headers"])
        assert response.status == 400, url
    ok = await client.post("/connect/v1/webhooks/facebook/subscribe", json={"url": "https://hooks.example.com/x"}, headers=ws["headers"])
    assert ok.status == 201
    unknown = await client.post("/connect/v1/webhooks/nosuch/subscribe", json={"url": "https://hooks.example.com/x"}, headers=ws["headers"])
    assert unknown.status == 404 and (await unknown.json())["message"] == "Provider not found: nosuch"


async def test_callback_secret_is_stored_encrypted(wh, receivers):
    receiver = await receivers()
    client, app, ws, sub = await setup_workspace(wh, receiver)
    async with app[SERVICES].db.session() as session:
        raw = (await session.execute(text("SELECT secret FROM webhook_subscriptions"))).scalar_one()
    assert CALLBACK_SECRET not in raw and raw


async def test_manual_redelivery_sends_the_same_event_again(wh, receivers, helpers):
    receiver = await receivers()
    client, app, ws, sub = await setup_workspace(wh, receiver)
    event_id = await send(client)
    await delivery_of(client, ws, event_id, helpers)
    again = await client.post(f"/connect/v1/webhooks/events/{event_id}/redeliver", headers=ws["headers"])
    assert again.status == 201
    assert [d["manual"] for d in (await again.json())["deliveries"]] == [True]
    await receiver.wait_for(2)
    assert receiver.requests[0]["body"] == receiver.requests[1]["body"]
    assert receiver.requests[1]["headers"]["X-Connect-Delivery"] == event_id
    other = await create_workspace_with_key(app, name="Other")
    assert (await client.post(f"/connect/v1/webhooks/events/{event_id}/redeliver", headers=other["headers"])).status == 404


async def test_subscriptions_and_deliveries_are_tenant_scoped(wh, receivers, helpers):
    receiver = await receivers()
    client, app, first, sub = await setup_workspace(wh, receiver)
    second = wh[3]
    assert await (await client.get("/connect/v1/webhooks/facebook/subscriptions", headers=second["headers"])).json() == []
    assert (await client.delete(f"/connect/v1/webhooks/facebook/subscribe/{sub['subscriptionId']}", headers=second["headers"])).status == 404
    event_id = await send(client)
    await delivery_of(client, first, event_id, helpers)
    listed = await (await client.get("/connect/v1/webhooks/deliveries", headers=second["headers"])).json()
    assert listed["total"] == 0
    async with app[SERVICES].db.session() as session:
        delivery_id = (await session.scalars(select(WebhookDelivery.id))).first()
    assert (await client.get(f"/connect/v1/webhooks/deliveries/{delivery_id}", headers=second["headers"])).status == 404
    assert (await client.get(f"/connect/v1/webhooks/deliveries/{delivery_id}", headers=first["headers"])).status == 200


async def test_permissions_gate_subscriptions_and_the_event_log(wh_app, aiohttp_client):
    client = await aiohttp_client(wh_app(background=False))
    viewer = await create_workspace_with_key(client.server.app, permissions=["webhooks.view"])
    refused = await client.post("/connect/v1/webhooks/facebook/subscribe", json={"url": "http://127.0.0.1:9/x"}, headers=viewer["headers"])
    assert refused.status == 403
    assert (await client.get("/connect/v1/webhooks/facebook/subscriptions", headers=viewer["headers"])).status == 200
    assert (await client.get("/connect/v1/webhooks/events", headers=viewer["headers"])).status == 200
    assert (await client.get("/connect/v1/webhooks/events")).status == 401
    assert (await client.get("/leads", headers=viewer["headers"])).status == 403


async def test_an_undecryptable_secret_fails_the_delivery_without_sending(wh, receivers, helpers):
    from patchbay.core.security.secrets import SecretBox

    receiver = await receivers()
    client, app, ws, sub = await setup_workspace(wh, receiver)
    async with app[SERVICES].db.transaction() as session:
        row = await session.get(WebhookSubscription, sub["subscriptionId"])
        row.secret = SecretBox(["a-key-this-deployment-does-not-have"]).encrypt("whatever-secret")
    event_id = await send(client)
    delivery = await delivery_of(client, ws, event_id, helpers)
    assert delivery["status"] == "failed" and "cannot be decrypted" in delivery["lastError"] and delivery["attempts"] == 0
    assert receiver.requests == []


async def test_a_subscription_to_a_provider_that_sends_no_webhooks_is_refused(client):
    ws = await create_workspace_with_key(client.server.app)
    response = await client.post("/connect/v1/webhooks/openai/subscribe", json={"url": "https://hooks.example.com/x"}, headers=ws["headers"])
    assert response.status == 400
    assert "openai sends no webhooks" in (await response.json())["message"]
    listed = await client.get("/connect/v1/webhooks/openai/subscriptions", headers=ws["headers"])
    assert await listed.json() == []


def test_generated_secrets_verify_with_the_official_standard_webhooks_library():
    from standardwebhooks.webhooks import Webhook

    body = json.dumps({"id": "evt", "data": {"n": 1}}).encode()
    timestamp = int(time.time())
    for n in range(60):  # URL-safe secrets failed about two times in three
        secret = generate_secret()
        headers = {"webhook-id": f"msg_{n}", "webhook-timestamp": str(timestamp), **signature_headers([secret], f"msg_{n}", timestamp, body)}
        assert Webhook(secret).verify(body, headers) == json.loads(body)  # raises WebhookVerificationError on a mismatch


async def test_a_rotated_generated_secret_signs_what_the_official_library_verifies(wh, receivers, helpers):
    from standardwebhooks.webhooks import Webhook

    receiver = await receivers()
    client, app, ws, sub = await setup_workspace(wh, receiver)
    rotated = await client.post(
        f"/connect/v1/webhooks/facebook/subscribe/{sub['subscriptionId']}/rotate-secret", json={"overlapSeconds": 0}, headers=ws["headers"]
    )
    secret = (await rotated.json())["callbackSecret"]
    assert secret.startswith("whsec_")
    event_id = await send(client)
    await delivery_of(client, ws, event_id, helpers)
    request = receiver.requests[0]
    headers = {k.lower(): v for k, v in request["headers"].items() if k.lower().startswith("webhook-")}
    assert Webhook(secret).verify(request["body"], headers)["id"] == event_id


def test_a_secret_stored_before_keeps_its_signing_key():
    legacy = "whsec_ab-cd_ef" + "x" * 20  # URL-safe text: not base64, so its UTF-8 bytes stay the key
    assert standard_key(legacy) == legacy.encode()
