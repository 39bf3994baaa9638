"""The proxy (spec 4.6) against the fake provider: both request forms, credential injection,
hop-by-hop headers, streaming both ways, the provider's 429 honoured, per-connection limits, the
audit log (no secrets), the SSRF guard, and the ConnectionClient handed to plugins."""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.client import client_for_provider, open_client
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.testing import create_workspace_with_key

KEY = "fake-api-key-123"  # FakeProvider.API_KEY


async def _connect(api, ws, provider="fakekey", params=None) -> str:
    response = await api.post(f"/connect/v1/providers/{provider}/connect", json={"credentials": {"apiKey": KEY}, "params": params or {}}, headers=ws["headers"])
    assert response.status == 201, await response.text()
    return (await response.json())["connectionId"]


async def test_envelope_form_injects_credentials_and_passes_through(api, ws, fake):
    connection_id = await _connect(api, ws)
    response = await api.post(
        "/connect/v1/proxy/fakekey",
        json={"method": "POST", "path": "/contacts", "body": {"name": "Ada"}, "headers": {"X-Custom": "1", "Authorization": "steal"}, "query": {"a": "b c"}},
        headers={**ws["headers"], "x-connection-id": connection_id},
    )
    assert response.status == 200
    body = await response.json()
    assert body == {"path": "/contacts", "method": "POST", "query": {"a": "b c"}, "body": '{"name":"Ada"}', "contentType": "application/json"}
    call = fake.api_calls[-1]
    assert call["headers"]["Authorization"] == f"Bearer {KEY}" and call["headers"]["X-Custom"] == "1"
    assert "x-api-key" not in {k.lower() for k in call["headers"]}, "the caller's credential never reaches the provider"
    assert response.headers["X-Upstream"] == "yes"
    assert "Keep-Alive" not in response.headers, "hop-by-hop headers are dropped"


async def test_passthrough_form_streams_both_ways(api, ws, fake):
    connection_id = await _connect(api, ws)
    headers = {**ws["headers"], "x-connection-id": connection_id}
    response = await api.get("/connect/v1/proxy/fakekey/big", headers=headers)
    assert response.status == 200
    assert len(await response.read()) == 64 * 16384
    assert response.headers.get("Transfer-Encoding") == "chunked" and "Connection" not in response.headers.get("X-Upstream", "")

    payload = b"0123456789abcdef" * 131072  # 2 MiB: above the buffer limit, streamed
    upload = await api.put("/connect/v1/proxy/fakekey/upload?kind=raw", data=payload, headers={**headers, "Content-Type": "application/octet-stream"})
    assert upload.status == 200
    assert (await upload.json())["sha256"] == hashlib.sha256(payload).hexdigest()
    assert fake.api_calls[-1]["query"] == {"kind": "raw"}


async def test_provider_429_is_waited_for_and_retried(api, ws, fake):
    connection_id = await _connect(api, ws)
    response = await api.post(
        "/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/limited"}, headers={**ws["headers"], "x-connection-id": connection_id}
    )
    assert response.status == 200
    assert [c["path"] for c in fake.api_calls[-2:]] == ["/limited", "/limited"]


async def test_per_connection_rate_limit(aiohttp_client, fake_app, fake):
    # an hour: the fixed window does not restart in the middle of the test
    api = await aiohttp_client(fake_app(rate_limits={"connect_api": "off", "proxy": "3/hour"}))
    ws = await create_workspace_with_key(api.server.app, plan="enterprise")
    first = await _connect(api, ws)
    second = await _connect(api, ws)
    statuses = []
    for _ in range(4):
        r = await api.post("/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/me"}, headers={**ws["headers"], "x-connection-id": first})
        statuses.append(r.status)
    assert statuses[:2] == [200, 200] and statuses[-1] == 429  # the validation call used one
    assert (await r.json())["message"] == "ThrottlerException: Too Many Requests" and int(r.headers["Retry-After"]) >= 1
    other = await api.post("/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/me"}, headers={**ws["headers"], "x-connection-id": second})
    assert other.status == 200, "the limit is per connection"


async def test_the_per_connection_limit_holds_across_processes(aiohttp_client, fake_app, pg_url):
    """Two servers on one PostgreSQL database (two processes, or two hosts) share the count."""
    limits = {"connect_api": "off", "proxy": "4/hour"}
    one = await aiohttp_client(fake_app(database_url=pg_url, rate_limits=limits))
    two = await aiohttp_client(fake_app(database_url=pg_url, rate_limits=limits))
    ws = await create_workspace_with_key(one.server.app, plan="enterprise")
    connection_id = await _connect(one, ws)  # the validation call is the first
    headers = {**ws["headers"], "x-connection-id": connection_id}
    statuses = []
    for server in (two, one, two, one):
        statuses.append((await server.post("/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/me"}, headers=headers)).status)
    assert statuses == [200, 200, 200, 429]


async def test_audit_log_lists_calls_without_secrets(api, ws, fake):
    connection_id = await _connect(api, ws, provider="fakequery")
    headers = {**ws["headers"], "x-connection-id": connection_id}
    for n in range(3):
        await api.get(f"/connect/v1/proxy/fakequery/items/{n}?secret=query-secret-value", headers=headers)
    page = await (await api.get(f"/connect/v1/connections/{connection_id}/audit?limit=2", headers=ws["headers"])).json()
    assert [row["path"] for row in page["data"]] == ["/items/2", "/items/1"]
    assert page["data"][0]["status"] == 200 and page["data"][0]["method"] == "GET" and page["data"][0]["durationMs"] > 0
    rest = await (await api.get(f"/connect/v1/connections/{connection_id}/audit?cursor={page['nextCursor']}", headers=ws["headers"])).json()
    assert [row["path"] for row in rest["data"]] == ["/items/0"] and rest["nextCursor"] is None
    assert fake.api_calls[-1]["query"]["api_key"] == KEY, "the key went to the provider in the query"
    from sqlalchemy import text

    async with api.server.app[SERVICES].db.session() as session:
        rows = (await session.execute(text("SELECT * FROM proxy_call_logs"))).mappings().all()
    assert len(rows) == 3 and KEY not in str([dict(r) for r in rows]) and "query-secret-value" not in str([dict(r) for r in rows])


async def test_ssrf_guard_refuses_private_targets(aiohttp_client, fake_app, fake):
    api = await aiohttp_client(fake_app())
    ws = await create_workspace_with_key(api.server.app, plan="enterprise")
    connection_id = await _connect(api, ws)

    api.server.app[SERVICES].outbound.allow_insecure = False  # as in production

    api.server.app[SERVICES].connections.forget(connection_id)
    response = await api.post("/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/me"}, headers={**ws["headers"], "x-connection-id": connection_id})
    assert response.status == 400 and "https" in (await response.json())["message"]
    absolute = await api.post(
        "/connect/v1/proxy/fakekey", json={"method": "GET", "path": "https://evil.example/x"}, headers={**ws["headers"], "x-connection-id": connection_id}
    )
    assert absolute.status == 400


async def test_proxy_validation_and_provider_mismatch(api, ws):
    connection_id = await _connect(api, ws)
    headers = {**ws["headers"], "x-connection-id": connection_id}
    assert (await api.post("/connect/v1/proxy/fakekey", json={"method": "TRACE", "path": "/x"}, headers=headers)).status == 400
    assert (await api.post("/connect/v1/proxy/fakekey", json={"method": "GET"}, headers=headers)).status == 400
    assert (await api.post("/connect/v1/proxy/fakequery", json={"method": "GET", "path": "/me"}, headers=headers)).status == 404
    by_provider = await api.post("/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/me"}, headers=ws["headers"])
    assert by_provider.status == 200, "without x-connection-id the active connection of the provider is used"


async def test_connection_client_for_plugins(api, ws, fake):
    app = api.server.app
    connection_id = await _connect(api, ws)
    client = await open_client(app[SERVICES], workspace_id=ws["workspace_id"], connection_id=connection_id)
    assert client.connection_id == connection_id and client.workspace_id == ws["workspace_id"] and client.provider.name == "fakekey"
    assert client.base_url == f"{fake.base}/api" and client.params == {}
    response = await client.request("POST", "/things", params={"q": 1, "flag": True}, json={"a": 1})
    assert response.status == 200 and response.ok
    assert response.json()["query"] == {"q": "1", "flag": "true"} and response.json()["body"] == '{"a":1}'
    form = await client.request("POST", "/form", data={"x": "1"})
    assert form.json()["contentType"] == "application/x-www-form-urlencoded"
    compressed = await client.get("/gzipped")
    assert compressed.json() == {"compressed": True}, "the client decompresses what the proxy passes through as is"
    absolute = await client.get(f"{fake.base}/api/abs")
    assert absolute.json()["path"] == "/abs"
    with pytest.raises(Invalid, match="must stay on the provider's API host"):
        await client.get("https://elsewhere.example/api/abs")
    same = await client_for_provider(app[SERVICES], workspace_id=ws["workspace_id"], provider_name="fakekey")
    assert same.connection_id == connection_id
    other = await create_workspace_with_key(app, name="Other")
    with pytest.raises(NotFound, match=f"Connection not found: {connection_id}"):  # answered 404 by the one mapping
        await open_client(app[SERVICES], workspace_id=other["workspace_id"], connection_id=connection_id)
    with pytest.raises(NotFound, match="No active fakekey connection"):
        await client_for_provider(app[SERVICES], workspace_id=other["workspace_id"], provider_name="fakekey")
    await asyncio.sleep(0)


async def test_provider_cookies_never_cross_tenants(api, ws, fake):
    other = await create_workspace_with_key(api.server.app, name="Other", plan="enterprise")
    local = {"server": fake.base.replace("127.0.0.1", "localhost")}  # a host name: cookie jars ignore IP hosts
    first, second = await _connect(api, ws, params=local), await _connect(api, other, params=local)
    one = await api.post(
        "/connect/v1/proxy/fakekey",
        json={"method": "GET", "path": "/set-cookie", "query": {"value": "tenant-a"}},
        headers={**ws["headers"], "x-connection-id": first},
    )
    assert "session=tenant-a" in one.headers.get("Set-Cookie", ""), "the provider's cookie is passed through to its caller"
    two = await api.post("/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/set-cookie"}, headers={**other["headers"], "x-connection-id": second})
    assert (await two.json())["cookie"] is None, "the outbound client keeps no cookie jar"


def test_hop_by_hop_headers_and_the_ones_connection_names_are_dropped():
    from patchbay.core.proxy.engine import drop_hop_by_hop

    kept = drop_hop_by_hop(
        {
            "Connection": "keep-alive, X-Hop",
            "X-Hop": "1",
            "Keep-Alive": "timeout=5",
            "Transfer-Encoding": "chunked",
            "Upgrade": "h2c",
            "Proxy-Authorization": "x",
            "TE": "trailers",
            "X-End": "2",
            "Content-Type": "text/plain",
        }
    )
    assert dict(kept) == {"X-End": "2", "Content-Type": "text/plain"}


async def test_long_provider_backoff_holds_the_connection(api, ws, fake):
    connection_id = await _connect(api, ws)
    headers = {**ws["headers"], "x-connection-id": connection_id}
    first = await api.post("/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/busy"}, headers=headers)
    assert first.status == 429 and first.headers["Retry-After"] == "30", "a long wait is passed through, not slept"
    calls = len(fake.api_calls)
    held = await api.post("/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/me"}, headers=headers)
    assert held.status == 429 and (await held.json())["message"] == "ThrottlerException: Too Many Requests"
    assert 25 <= int(held.headers["Retry-After"]) <= 30
    assert len(fake.api_calls) == calls, "held calls do not reach the provider"


async def test_proxy_passes_compressed_bodies_through(api, ws):
    connection_id = await _connect(api, ws)
    response = await api.get("/connect/v1/proxy/fakekey/gzipped", headers={**ws["headers"], "x-connection-id": connection_id}, auto_decompress=False)
    assert response.headers["Content-Encoding"] == "gzip"
    import gzip

    assert gzip.decompress(await response.read()) == b'{"compressed": true}'
