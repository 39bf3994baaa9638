"""Connection events reach the customer's backend as outbound webhooks, signed and retried like
forwarded provider events: created, failed (the provider refused the key) and reconnected."""

from __future__ import annotations

import hashlib
import hmac
import json

from aiohttp import ClientSession, CookieJar

from patchbay.core.testing import create_workspace_with_key
from patchbay.providers.meta.fixtures import fast_webhooks, helpers, receivers  # noqa: F401

API_KEY = "acme-secret-key-1"
SECRET = "customer-callback-secret"


async def test_created_failed_and_reconnected_events_are_delivered_signed(aiohttp_server, make_connect_app, fast_webhooks, receivers, helpers, through_page):
    receiver = await receivers([503, 200, 200, 200])
    server = await aiohttp_server(make_connect_app(background=True, webhooks=fast_webhooks))
    base = str(server.make_url("")).rstrip("/")
    ws = await create_workspace_with_key(server.app, plan="enterprise")
    async with ClientSession(headers=ws["headers"]) as api:
        subscribed = await api.post(
            f"{base}/connect/v1/webhooks/acmekeys/subscribe",
            json={"callbackUrl": receiver.url, "callbackSecret": SECRET, "events": ["connection.created", "connection.reconnected", "connection.failed"]},
        )
        assert subscribed.status == 201, await subscribed.text()
        first = await (await api.post(f"{base}/connect/v1/connect-sessions", json={"endUser": {"id": "user-42"}, "allowedProviders": ["acmekeys"]})).json()

    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:
        refused = await through_page(browser, base, first["token"], "acmekeys", {"apiKey": "wrong", "param:subdomain": "ada-co"})
        assert refused.status == 400
        connected = await through_page(browser, base, first["token"], "acmekeys", {"apiKey": API_KEY, "param:subdomain": "ada-co"})
        assert connected.status == 303
    async with ClientSession(headers=ws["headers"]) as api:
        connection_id = (await (await api.get(f"{base}/connect/v1/connections?endUserId=user-42")).json())["data"][0]["connectionId"]
        again = await (
            await api.post(f"{base}/connect/v1/connect-sessions", json={"endUser": {"id": "user-42"}, "reconnectConnectionId": connection_id})
        ).json()
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:
        assert (await through_page(browser, base, again["token"], "acmekeys", {"apiKey": API_KEY, "param:subdomain": "ada-co"})).status == 303

    async def all_delivered():
        return len(receiver.requests) >= 4 or None

    await helpers.wait_until(all_delivered, timeout=30)
    received = {}
    for request in receiver.requests:
        headers, raw = request["headers"], request["body"]
        assert headers["X-Connect-Signature"] == hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
        body = json.loads(raw)
        assert body["provider"] == "acmekeys" and body["workspaceId"] == ws["workspace_id"] and headers["X-Connect-Event"] == body["event"]
        received.setdefault(body["event"], []).append((headers["X-Connect-Delivery"], body["data"]))
    assert set(received) == {"connection.failed", "connection.created", "connection.reconnected"}
    failed = received["connection.failed"]
    assert len({delivery for delivery, _ in failed}) == 1, "the 503 was retried as the same delivery"
    assert failed[0][1]["endUserId"] == "user-42" and "rejected" in failed[0][1]["reason"]
    assert received["connection.created"][0][1] == {"connectionId": connection_id, "endUserId": "user-42", "connectSessionId": first["id"]}
    assert received["connection.reconnected"][0][1]["connectionId"] == connection_id


async def test_disconnecting_and_deleting_a_connection_send_connection_removed_once_each(
    aiohttp_server, make_connect_app, fast_webhooks, receivers, helpers, through_page
):
    receiver = await receivers([200, 200])
    server = await aiohttp_server(make_connect_app(background=True, webhooks=fast_webhooks))
    base = str(server.make_url("")).rstrip("/")
    ws = await create_workspace_with_key(server.app, plan="enterprise")
    async with ClientSession(headers=ws["headers"]) as api:
        subscribed = await api.post(
            f"{base}/connect/v1/webhooks/acmekeys/subscribe", json={"callbackUrl": receiver.url, "callbackSecret": SECRET, "events": ["connection.removed"]}
        )
        assert subscribed.status == 201, await subscribed.text()
        session = await (await api.post(f"{base}/connect/v1/connect-sessions", json={"endUser": {"id": "user-7"}, "allowedProviders": ["acmekeys"]})).json()
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:
        assert (await through_page(browser, base, session["token"], "acmekeys", {"apiKey": API_KEY, "param:subdomain": "ada-co"})).status == 303
    async with ClientSession(headers=ws["headers"]) as api:
        connection_id = (await (await api.get(f"{base}/connect/v1/connections?endUserId=user-7")).json())["data"][0]["connectionId"]
        assert (await api.delete(f"{base}/connect/v1/providers/acmekeys/disconnect")).status == 200
        assert (await api.delete(f"{base}/connect/v1/providers/acmekeys/disconnect")).status in (200, 404)  # already disconnected: no second event
        assert (await api.delete(f"{base}/connect/v1/connections/{connection_id}")).status == 200

    async def both_delivered():
        return len(receiver.requests) >= 2 or None

    await helpers.wait_until(both_delivered, timeout=30)
    bodies = [json.loads(request["body"]) for request in receiver.requests]
    assert [body["event"] for body in bodies] == ["connection.removed", "connection.removed"]
    assert sorted((body["data"] for body in bodies), key=lambda data: data["deleted"]) == [
        {"connectionId": connection_id, "endUserId": "user-7", "deleted": False},
        {"connectionId": connection_id, "endUserId": "user-7", "deleted": True},
    ]
