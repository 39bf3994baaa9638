"""Malformed input to the event log, delivery and subscription routes answers 400 naming the field
(never 500, never a value read as something else), on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from patchbay.core.testing import create_workspace_with_key


@pytest.fixture
async def api(aiohttp_client, wh_app, database_url):
    client = await aiohttp_client(wh_app(background=False, database_url=database_url))
    ws = await create_workspace_with_key(client.server.app)
    return client, ws["headers"]


async def _refused(response, field: str) -> None:
    assert response.status == 400, await response.text()
    assert field in (await response.json())["message"]


async def _subscription(client, headers, provider="facebook") -> str:
    created = await client.post(
        f"/connect/v1/webhooks/{provider}/subscribe", json={"url": "http://127.0.0.1:9/hook", "events": ["connection.removed"]}, headers=headers
    )
    assert created.status == 201, await created.text()
    return (await created.json())["subscriptionId"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"events": "leadgen"}, "events"),
        ({"events": [""]}, "events"),
        ({"eventType": 3}, "eventType"),
        ({"isActive": "yes"}, "isActive"),
        ({"longTailRetries": 1}, "longTailRetries"),
        ({"url": ""}, "url"),
        ({"url": "http://["}, "url"),
        ({"callbackUrl": "https://[::1/x"}, "callbackUrl"),
    ],
)
async def test_a_malformed_subscription_change_is_400_naming_the_field(api, body, field):
    client, headers = api
    subscription_id = await _subscription(client, headers)
    await _refused(await client.patch(f"/connect/v1/webhooks/facebook/subscribe/{subscription_id}", json=body, headers=headers), field)
    unchanged = await (await client.get("/connect/v1/webhooks/facebook/subscriptions", headers=headers)).json()
    assert [(s["events"], s["isActive"], s["longTailRetries"]) for s in unchanged] == [(["connection.removed"], True, False)]


async def test_a_url_that_does_not_parse_is_400_naming_the_field(api):
    client, headers = api
    await _refused(
        await client.post("/connect/v1/webhooks/facebook/subscribe", json={"callbackUrl": "http://[", "eventType": "*"}, headers=headers), "callbackUrl"
    )


async def test_a_provider_without_webhooks_keeps_its_subscriptions_to_connection_events(api):
    client, headers = api
    subscription_id = await _subscription(client, headers, provider="openai")
    await _refused(
        await client.patch(f"/connect/v1/webhooks/openai/subscribe/{subscription_id}", json={"events": ["leadgen"]}, headers=headers),
        "openai sends no webhooks",
    )
    changed = await client.patch(f"/connect/v1/webhooks/openai/subscribe/{subscription_id}", json={"events": ["connection.created"]}, headers=headers)
    assert changed.status == 200 and (await changed.json())["events"] == ["connection.created"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"overlapSeconds": "60"}, "overlapSeconds"),
        ({"overlapSeconds": -1}, "overlapSeconds"),
        ({"overlapSeconds": True}, "overlapSeconds"),
        ({"callbackSecret": "short"}, "callbackSecret"),
    ],
)
async def test_a_malformed_rotation_is_400_naming_the_field(api, body, field):
    client, headers = api
    subscription_id = await _subscription(client, headers)
    await _refused(await client.post(f"/connect/v1/webhooks/facebook/subscribe/{subscription_id}/rotate-secret", json=body, headers=headers), field)


async def test_a_malformed_redelivery_is_400_naming_the_field(api):
    client, headers = api
    await _refused(await client.post("/connect/v1/webhooks/events/no-such-event/redeliver", json={"subscriptionId": 7}, headers=headers), "subscriptionId")
    refused = await client.post("/connect/v1/webhooks/events/no-such-event/redeliver", json=["x"], headers=headers)
    assert refused.status == 400
    assert (await client.post("/connect/v1/webhooks/events/no-such-event/redeliver", headers=headers)).status == 404  # no body: every subscription


@pytest.mark.parametrize(
    "path, param",
    [
        ("/connect/v1/webhooks/events", "provider"),
        ("/connect/v1/webhooks/events", "eventType"),
        ("/connect/v1/webhooks/deliveries", "eventId"),
        ("/connect/v1/webhooks/deliveries", "subscriptionId"),
    ],
)
@pytest.mark.both_databases
async def test_a_nul_character_in_a_filter_is_400_naming_it(api, path, param):
    client, headers = api
    await _refused(await client.get(path, params={param: "a\x00b"}, headers=headers), param)


async def test_the_event_log_refuses_an_unknown_status_and_takes_either_case(api):
    client, headers = api
    await _refused(await client.get("/connect/v1/webhooks/events", params={"status": "LOST"}, headers=headers), "status")
    for status in ("failed", "FAILED"):
        listed = await client.get("/connect/v1/webhooks/events", params={"status": status}, headers=headers)
        assert listed.status == 200 and (await listed.json()) == {"data": [], "page": 1, "limit": 20, "total": 0}


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/connect/v1/webhooks/events/a%00b"),
        ("POST", "/connect/v1/webhooks/events/a%00b/redeliver"),
        ("GET", "/connect/v1/webhooks/deliveries/a%00b"),
        ("PATCH", "/connect/v1/webhooks/facebook/subscribe/a%00b"),
        ("DELETE", "/connect/v1/webhooks/facebook/subscribe/a%00b"),
        ("POST", "/connect/v1/webhooks/facebook/subscribe/a%00b/rotate-secret"),
    ],
)
@pytest.mark.both_databases
async def test_an_id_holding_nul_is_not_found(api, method, path):
    client, headers = api
    response = await client.request(method, path, json={} if method == "PATCH" else None, headers=headers)
    assert response.status == 404, await response.text()
