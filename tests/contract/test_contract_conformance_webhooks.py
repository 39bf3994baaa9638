"""schemathesis' positive phases against the webhook event log, its deliveries, the outbound
subscriptions and the alert subscriptions on a real port (issue 17): every answer matches the
schema /openapi.json gives for its status (``response_schema_conformance``) and no generated input
is a server error. The seed gives the answers data: a subscription of the contract provider to a
local receiver, the ``connection.removed`` event a disconnect sends it with its delivered
attempt, and an alert subscription; spares take the deletes. Bounded for CI: a few examples per
operation and a budget after which the run fails instead of hanging.

Also: each of these operations publishes a success schema, not the ``default`` placeholder."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import TestClient, TestServer

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.testing import drain
from patchbay.core.testing import create_workspace_with_key
from patchbay.testing import Receiver
from tests.contract.conformance import Operations

BUDGET_SECONDS = 150
MAX_EXAMPLES = 4
PATHS = r"^/connect/v1/(webhooks/(events|deliveries|[^/]+/subscri)|alerts)"

#: every operation of the area and its success status
OPERATIONS = {
    ("get", "/connect/v1/webhooks/events"): "200",
    ("get", "/connect/v1/webhooks/events/{id}"): "200",
    ("post", "/connect/v1/webhooks/events/{id}/redeliver"): "201",
    ("get", "/connect/v1/webhooks/deliveries"): "200",
    ("get", "/connect/v1/webhooks/deliveries/{id}"): "200",
    ("post", "/connect/v1/webhooks/{type}/subscribe"): "201",
    ("get", "/connect/v1/webhooks/{type}/subscriptions"): "200",
    ("delete", "/connect/v1/webhooks/{type}/subscribe/{id}"): "200",
    ("patch", "/connect/v1/webhooks/{type}/subscribe/{id}"): "200",
    ("post", "/connect/v1/webhooks/{type}/subscribe/{id}/rotate-secret"): "201",
    ("get", "/connect/v1/alerts"): "200",
    ("post", "/connect/v1/alerts"): "201",
    ("patch", "/connect/v1/alerts/{subscriptionId}"): "200",
    ("delete", "/connect/v1/alerts/{subscriptionId}"): "200",
}


async def _seed(api, receiver: Receiver) -> dict[str, str]:
    """A signed subscription to ``receiver`` for the connection events, the ``connection.removed``
    event of a connect then disconnect, its delivery made (the jobs drained: no workers run here),
    an alert subscription, and a spare of each subscription for the deletes."""
    events = ["connection.created", "connection.removed"]
    subscription, spare_subscription = [
        await api.call(
            "POST",
            f"/connect/v1/webhooks/{api.provider}/subscribe",
            expect=201,
            json={"callbackUrl": receiver.url + f"/hook{n}", "events": events, "callbackSecret": "conformance-secret"},
        )
        for n in range(2)
    ]
    await api.call("POST", f"/connect/v1/providers/{api.provider}/connect", expect=201, json={"credentials": {"apiKey": "k-1"}})
    await api.call("DELETE", f"/connect/v1/providers/{api.provider}/disconnect", expect=200)
    await drain(api.server.app[SERVICES])
    deliveries = await api.call("GET", "/connect/v1/webhooks/deliveries", expect=200, params={"subscriptionId": subscription["subscriptionId"]})
    delivery = deliveries["data"][0]
    assert delivery["status"] == "succeeded" and delivery["attemptLog"], delivery
    alert, spare_alert = [
        await api.call("POST", "/connect/v1/alerts", expect=201, json={"channel": "webhook", "target": receiver.url + "/alerts", "eventTypes": ["flow.failed"]})
        for _ in range(2)
    ]
    return {
        "event": delivery["eventId"],
        "delivery": delivery["id"],
        "subscription": subscription["subscriptionId"],
        "spare_subscription": spare_subscription["subscriptionId"],
        "alert": alert["id"],
        "spare_alert": spare_alert["id"],
    }


def _parameters(provider: str, seeded: dict[str, str]) -> tuple[dict[str, str], list[Operations]]:
    """The path parameters that name seeded things (``id`` is an event's, a delivery's or a
    subscription's by operation; the spares for the deletes)."""
    subscription = "/connect/v1/webhooks/{type}/subscribe/{id}"
    operations = [
        Operations('include-path-regex = "^/connect/v1/webhooks/events/"', {"path.id": seeded["event"]}),
        Operations('include-path-regex = "^/connect/v1/webhooks/deliveries/"', {"path.id": seeded["delivery"]}),
        Operations(f'include-name = ["PATCH {subscription}", "POST {subscription}/rotate-secret"]', {"path.id": seeded["subscription"]}),
        Operations(f'include-name = "DELETE {subscription}"', {"path.id": seeded["spare_subscription"]}),
        Operations('include-name = "PATCH /connect/v1/alerts/{subscriptionId}"', {"path.subscriptionId": seeded["alert"]}),
        Operations('include-name = "DELETE /connect/v1/alerts/{subscriptionId}"', {"path.subscriptionId": seeded["spare_alert"]}),
    ]
    return {"path.type": provider}, operations


@pytest.fixture
async def receiver():
    server = await Receiver().start()
    yield server
    await server.close()


@pytest.mark.timeout(BUDGET_SECONDS + 60)
async def test_webhook_and_alert_answers_match_the_document(live_api, conformance, receiver):
    text = await conformance(PATHS, *_parameters(live_api.provider, await _seed(live_api, receiver)), budget=BUDGET_SECONDS, max_examples=MAX_EXAMPLES)
    assert f"Selected: {len(OPERATIONS)}/" in text and f"Tested: {len(OPERATIONS)}\n" in text, text[-5_000:]  # every operation, none other


async def test_every_operation_publishes_its_success_schema(make_app):
    async with TestClient(TestServer(make_app())) as client:
        ws = await create_workspace_with_key(client.server.app)
        document = await (await client.get("/openapi.json", headers=ws["headers"])).json()
    for (method, path), status in OPERATIONS.items():
        responses = document["paths"][path][method]["responses"]
        assert "default" not in responses, f"{method.upper()} {path} has no declared answer"
        schema = responses[status]["content"]["application/json"]["schema"]
        assert schema.get("$ref") or schema.get("items", {}).get("$ref"), f"{method.upper()} {path}: {schema}"
