"""Malformed alert subscriptions answer 400 naming the field (never 500, never a value read as
something else); a change leaves what it does not name, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from patchbay.core.testing import create_workspace_with_key


@pytest.fixture
async def api(aiohttp_client, make_app, database_url, receiver):
    client = await aiohttp_client(make_app(database_url=database_url))
    ws = await create_workspace_with_key(client.server.app)
    return client, ws["headers"], receiver.url


async def _refused(response, field: str) -> None:
    assert response.status == 400, await response.text()
    assert field in (await response.json())["message"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"target": "T"}, "channel"),
        ({"channel": 3, "target": "T"}, "channel"),
        ({"channel": "webhook"}, "target"),
        ({"channel": "webhook", "target": 3}, "target"),
        ({"channel": "webhook", "target": "  "}, "target"),
        ({"channel": "webhook", "target": "http://["}, "target"),
        ({"channel": "webhook", "target": "T", "eventTypes": "flow.failed"}, "eventTypes"),
        ({"channel": "webhook", "target": "T", "eventTypes": []}, "eventTypes"),
        ({"channel": "webhook", "target": "T", "eventTypes": [3]}, "eventTypes"),
        ({"channel": "webhook", "target": "T", "isActive": "yes"}, "isActive"),
    ],
)
async def test_a_malformed_subscription_is_400_naming_the_field(api, body, field):
    client, headers, url = api
    body = {key: url if value == "T" else value for key, value in body.items()}
    await _refused(await client.post("/connect/v1/alerts", json=body, headers=headers), field)
    assert await (await client.get("/connect/v1/alerts", headers=headers)).json() == []


@pytest.mark.parametrize(
    "body, field",
    [
        ({"isActive": "no"}, "isActive"),
        ({"target": 3}, "target"),
        ({"target": "https://[::1/x"}, "target"),
        ({"eventTypes": "flow.succeeded"}, "eventTypes"),
        ({"eventTypes": []}, "eventTypes"),
        ({"eventTypes": ["flow.maybe"]}, "eventTypes"),
    ],
)
async def test_a_malformed_change_is_400_naming_the_field(api, body, field):
    client, headers, url = api
    created = await (await client.post("/connect/v1/alerts", json={"channel": "webhook", "target": url}, headers=headers)).json()
    await _refused(await client.patch(f"/connect/v1/alerts/{created['id']}", json=body, headers=headers), field)
    assert await (await client.get("/connect/v1/alerts", headers=headers)).json() == [created]


async def test_defaults_and_a_change_that_names_one_field(api):
    client, headers, url = api
    created = await client.post(
        "/connect/v1/alerts", json={"channel": "webhook", "target": url, "eventTypes": ["flow.failed", "jobs.failing", "flow.failed"]}, headers=headers
    )
    assert created.status == 201
    alert = await created.json()
    assert set(alert) == {"id", "subscriptionId", "channel", "target", "eventTypes", "isActive", "createdAt", "updatedAt"}
    assert alert["id"] == alert["subscriptionId"] and alert["eventTypes"] == ["flow.failed", "jobs.failing"] and alert["isActive"] is True
    plain = await (await client.post("/connect/v1/alerts", json={"channel": "webhook", "target": url}, headers=headers)).json()
    assert plain["eventTypes"] == ["flow.failed"]
    changed = await (await client.patch(f"/connect/v1/alerts/{alert['id']}", json={"isActive": False, "target": None}, headers=headers)).json()
    assert changed["isActive"] is False and changed["target"] == url and changed["eventTypes"] == ["flow.failed", "jobs.failing"]
    assert await (await client.delete(f"/connect/v1/alerts/{plain['id']}", headers=headers)).json() == {"success": True}


@pytest.mark.both_databases
async def test_an_id_holding_nul_is_not_found(api):
    client, headers, _ = api
    assert (await client.patch("/connect/v1/alerts/a%00b", json={"isActive": False}, headers=headers)).status == 404
    assert (await client.delete("/connect/v1/alerts/a%00b", headers=headers)).status == 404
