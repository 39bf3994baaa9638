"""Billing through the built-in Stripe plugin against a local fake Stripe API: checkout, portal,
cancel at period end, resume; webhooks signed with Stripe's scheme (t=..., v1=HMAC-SHA256 of
"t.payload"), refused when the signature is wrong or stale, and applied once when replayed."""

from __future__ import annotations

import json
import time

import pytest
from aiohttp import web
from sqlalchemy import func, select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.billing.models import PaymentEvent, Subscription
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.workspaces.models import Workspace
from patchbay.plugins.stripe import sign

SECRET_KEY = "sk_test_123"
WEBHOOK_SECRET = "whsec_test_456"
PERIOD_END = 1_900_000_000


@pytest.fixture
async def fake_stripe(aiohttp_server):
    calls: list[tuple[str, dict[str, str]]] = []

    async def handle(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {SECRET_KEY}":
            return web.json_response({"error": {"message": "Invalid API Key provided"}}, status=401)
        form = dict(await request.post())
        calls.append((request.path, form))
        if request.path == "/v1/checkout/sessions":
            return web.json_response({"id": "cs_test_1", "object": "checkout.session", "url": "https://checkout.stripe.test/c/cs_test_1"})
        if request.path == "/v1/billing_portal/sessions":
            return web.json_response({"id": "bps_1", "url": f"https://billing.stripe.test/p/{form['customer']}"})
        subscription_id = request.match_info["id"]
        return web.json_response(_subscription(subscription_id, cancel=form["cancel_at_period_end"] == "true"))

    app = web.Application()
    app.router.add_post("/v1/checkout/sessions", handle)
    app.router.add_post("/v1/billing_portal/sessions", handle)
    app.router.add_post("/v1/subscriptions/{id}", handle)
    server = await aiohttp_server(app)
    return str(server.make_url("")), calls


def _subscription(subscription_id: str, *, cancel: bool = False, status: str = "active", price: str = "price_starter") -> dict:
    return {
        "id": subscription_id,
        "object": "subscription",
        "customer": "cus_1",
        "status": status,
        "cancel_at_period_end": cancel,
        "items": {"data": [{"price": {"id": price}, "current_period_end": PERIOD_END}]},
        "metadata": {},
    }


def _stripe_settings(api_base: str) -> dict[str, dict[str, str]]:
    """The billing plugin's own ``[stripe]`` section (``plugin_sections`` of the settings)."""
    return {
        "stripe": {
            "secret_key": SECRET_KEY,
            "webhook_secret": WEBHOOK_SECRET,
            "api_base": api_base,
            "price_starter": "price_starter",
            "price_professional": "price_pro",
        }
    }


def _event(event_id: str, event_type: str, obj: dict) -> bytes:
    return json.dumps({"id": event_id, "object": "event", "type": event_type, "data": {"object": obj}}).encode()


async def _post_event(client, payload: bytes, *, secret: str = WEBHOOK_SECRET, timestamp: int | None = None):
    header = sign(payload, secret, int(time.time()) if timestamp is None else timestamp)
    return await client.post("/billing/webhook", data=payload, headers={"Stripe-Signature": header, "Content-Type": "application/json"})


async def _plan(app, workspace_id):
    async with app[SERVICES].db.session() as session:
        return await session.scalar(select(Workspace.plan).where(Workspace.id == workspace_id))


async def test_checkout_webhook_portal_cancel_resume(aiohttp_client, make_app, fake_stripe):
    api_base, calls = fake_stripe
    app = make_app(plugin_sections=_stripe_settings(api_base))
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    headers = ws["headers"]

    plan = await (await client.get("/connect/v1/billing/plan", headers=headers)).json()
    assert plan["plan"] == "free" and plan["paymentProvider"] == "stripe" and plan["availablePlans"] == ["starter", "professional"]
    assert plan["limits"]["template_clones"] == 3

    refused = await client.post("/connect/v1/billing/checkout", json={"plan": "enterprise"}, headers=headers)
    assert refused.status == 400
    checkout = await client.post("/connect/v1/billing/checkout", json={"plan": "starter", "successUrl": "https://app.test/ok"}, headers=headers)
    assert checkout.status == 201, await checkout.text()
    assert (await checkout.json())["url"] == "https://checkout.stripe.test/c/cs_test_1"
    path, form = calls[-1]
    assert path == "/v1/checkout/sessions"
    assert form["mode"] == "subscription" and form["line_items[0][price]"] == "price_starter" and form["line_items[0][quantity]"] == "1"
    assert form["client_reference_id"] == ws["workspace_id"] and form["subscription_data[metadata][workspace_id]"] == ws["workspace_id"]
    assert form["success_url"] == "https://app.test/ok"

    completed = _event(
        "evt_1",
        "checkout.session.completed",
        {
            "id": "cs_test_1",
            "client_reference_id": ws["workspace_id"],
            "customer": "cus_1",
            "subscription": "sub_1",
            "metadata": {"workspace_id": ws["workspace_id"], "plan": "starter"},
        },
    )
    response = await _post_event(client, completed)
    assert response.status == 200 and await response.json() == {"received": True, "duplicate": False}
    assert await _plan(app, ws["workspace_id"]) == "starter"
    updated = _event("evt_2", "customer.subscription.updated", _subscription("sub_1", price="price_pro"))
    assert (await _post_event(client, updated)).status == 200
    assert await _plan(app, ws["workspace_id"]) == "professional"

    shown = await (await client.get("/connect/v1/billing/plan", headers=headers)).json()
    assert shown["subscription"]["subscriptionId"] == "sub_1" and shown["subscription"]["customerId"] == "cus_1"
    assert shown["subscription"]["currentPeriodEnd"].startswith("2030-03-17")
    assert shown["limits"]["template_clones"] is None
    assert (await client.post("/connect/v1/billing/checkout", json={"plan": "starter"}, headers=headers)).status == 409

    portal = await client.post("/connect/v1/billing/portal", json={"returnUrl": "https://app.test/billing"}, headers=headers)
    assert (await portal.json())["url"] == "https://billing.stripe.test/p/cus_1"
    assert calls[-1][1] == {"customer": "cus_1", "return_url": "https://app.test/billing"}

    cancelled = await client.delete("/connect/v1/billing/subscription", headers=headers)
    assert cancelled.status == 200 and (await cancelled.json())["cancelAtPeriodEnd"] is True
    assert calls[-1] == ("/v1/subscriptions/sub_1", {"cancel_at_period_end": "true"})
    resumed = await client.post("/connect/v1/billing/subscription/resume", headers=headers)
    assert resumed.status == 201 and (await resumed.json())["cancelAtPeriodEnd"] is False
    assert calls[-1] == ("/v1/subscriptions/sub_1", {"cancel_at_period_end": "false"})
    assert (await client.post("/connect/v1/billing/subscription/resume", headers=headers)).status == 409

    deleted = _event("evt_3", "customer.subscription.deleted", _subscription("sub_1", status="canceled"))
    assert (await _post_event(client, deleted)).status == 200
    assert await _plan(app, ws["workspace_id"]) == "free"
    assert (await client.delete("/connect/v1/billing/subscription", headers=headers)).status == 404


async def test_webhook_bad_signature_stale_timestamp_and_replay(aiohttp_client, make_app, fake_stripe, database_url):
    app = make_app(plugin_sections=_stripe_settings(fake_stripe[0]), database_url=database_url)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    payload = _event(
        "evt_9",
        "checkout.session.completed",
        {"client_reference_id": ws["workspace_id"], "customer": "cus_9", "subscription": "sub_9", "metadata": {"plan": "starter"}},
    )

    bad = await _post_event(client, payload, secret="whsec_wrong")
    assert (bad.status, (await bad.json())["message"]) == (400, "Invalid signature")
    stale = await _post_event(client, payload, timestamp=int(time.time()) - 301)
    assert (stale.status, (await stale.json())["message"]) == (400, "Timestamp outside the tolerance zone")
    missing = await client.post("/billing/webhook", data=payload)
    assert missing.status == 400
    tampered_header = sign(payload, WEBHOOK_SECRET, int(time.time()))
    tampered = await client.post("/billing/webhook", data=payload.replace(b"starter", b"enterprise"), headers={"Stripe-Signature": tampered_header})
    assert tampered.status == 400
    assert await _plan(app, ws["workspace_id"]) == "free"

    first = await _post_event(client, payload, timestamp=int(time.time()) - 200)  # inside the tolerance
    assert await first.json() == {"received": True, "duplicate": False}
    assert await _plan(app, ws["workspace_id"]) == "starter"
    async with app[SERVICES].db.transaction() as session:  # an operator downgrade after the event
        await session.execute(update(Workspace).where(Workspace.id == ws["workspace_id"]).values(plan="free"))
    replay = await _post_event(client, payload)
    assert replay.status == 200 and await replay.json() == {"received": True, "duplicate": True}
    assert await _plan(app, ws["workspace_id"]) == "free"  # not applied twice
    async with app[SERVICES].db.session() as session:
        assert await session.scalar(select(func.count()).select_from(PaymentEvent)) == 1
        assert (await session.scalar(select(Subscription))).customer_id == "cus_9"


async def test_without_payment_provider(client, workspace):
    for method, path in (("POST", "/connect/v1/billing/checkout"), ("POST", "/connect/v1/billing/portal"), ("DELETE", "/connect/v1/billing/subscription")):
        response = await client.request(method, path, json={"plan": "starter"}, headers=workspace["headers"])
        assert response.status == 400, path
    plan = await (await client.get("/connect/v1/billing/plan", headers=workspace["headers"])).json()
    assert plan["paymentProvider"] is None and plan["subscription"] is None
    assert (await client.post("/billing/webhook", data=b"{}")).status == 404


async def test_stripe_errors_become_502(aiohttp_client, make_app, fake_stripe):
    sections = _stripe_settings(fake_stripe[0])
    sections["stripe"]["secret_key"] = "sk_test_wrong"
    app = make_app(plugin_sections=sections)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    response = await client.post("/connect/v1/billing/checkout", json={"plan": "starter"}, headers=ws["headers"])
    assert response.status == 502
    assert "Invalid API Key provided" in (await response.json())["message"]


async def test_subscription_statuses(aiohttp_client, make_app, fake_stripe):
    app = make_app(plugin_sections=_stripe_settings(fake_stripe[0]))
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    created = _subscription("sub_5", status="incomplete")
    created["metadata"] = {"workspace_id": ws["workspace_id"], "plan": "starter"}
    assert (await _post_event(client, _event("evt_a", "customer.subscription.created", created))).status == 200
    assert await _plan(app, ws["workspace_id"]) == "free"  # payment pending: nothing yet
    assert (await _post_event(client, _event("evt_b", "customer.subscription.updated", {**created, "status": "active"}))).status == 200
    assert await _plan(app, ws["workspace_id"]) == "starter"
    assert (await _post_event(client, _event("evt_c", "customer.subscription.updated", {**created, "status": "incomplete"}))).status == 200
    assert await _plan(app, ws["workspace_id"]) == "starter"
    assert (await _post_event(client, _event("evt_d", "customer.subscription.updated", {**created, "status": "unpaid"}))).status == 200
    assert await _plan(app, ws["workspace_id"]) == "free"
    assert (await _post_event(client, _event("evt_e", "invoice.paid", {"id": "in_1"}))).status == 200


@pytest.mark.both_databases
async def test_concurrent_replays_apply_once(aiohttp_client, make_app, fake_stripe, database_url):
    import asyncio

    app = make_app(plugin_sections=_stripe_settings(fake_stripe[0]), database_url=database_url)
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    payload = _event(
        "evt_same",
        "checkout.session.completed",
        {"client_reference_id": ws["workspace_id"], "customer": "cus_c", "subscription": "sub_c", "metadata": {"plan": "starter"}},
    )
    responses = await asyncio.gather(*(_post_event(client, payload) for _ in range(5)))
    bodies = [await r.json() for r in responses]
    assert all(r.status == 200 for r in responses)
    assert sorted(b["duplicate"] for b in bodies) == [False, True, True, True, True]
    async with app[SERVICES].db.session() as session:
        assert await session.scalar(select(func.count()).select_from(PaymentEvent)) == 1
        assert await session.scalar(select(func.count()).select_from(Subscription)) == 1
