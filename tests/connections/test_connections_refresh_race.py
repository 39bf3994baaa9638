"""Concurrent calls on an expired token cause exactly one refresh at the provider, within one
process (asyncio lock) and across processes (the database lease): two apps over one database stand
for two processes, each with its own locks and cache. The fake provider rotates refresh tokens, so a
second refresh would fail with invalid_grant."""

from __future__ import annotations

import asyncio

from patchbay.core.testing import create_workspace_with_key


async def _expired_connection(api, ws, fake) -> str:
    tokens = fake._issue()
    fake.access_tokens.pop(tokens["access_token"])  # the provider no longer accepts it
    response = await api.post(
        "/api/connections/import",
        json={"providerType": "fakeoauth", "credentials": {"accessToken": tokens["access_token"], "refreshToken": tokens["refresh_token"], "expiresAt": 946684800}},
        headers=ws["headers"],
    )
    assert response.status == 201, await response.text()
    return (await response.json())["connectionId"]


async def _call(api, ws, connection_id, n):
    return await api.post("/connect/v1/proxy/fakeoauth", json={"method": "GET", "path": f"/items/{n}"}, headers={**ws["headers"], "x-connection-id": connection_id})


async def test_twenty_concurrent_calls_refresh_once(aiohttp_client, fake_app, fake, database_url):
    api = await aiohttp_client(fake_app(database_url=database_url))
    ws = await create_workspace_with_key(api.server.app, plan="enterprise")
    connection_id = await _expired_connection(api, ws, fake)
    fake.refresh_delay = 0.3
    responses = await asyncio.gather(*(_call(api, ws, connection_id, n) for n in range(20)))
    assert [r.status for r in responses] == [200] * 20
    assert fake.refresh_calls == 1
    tokens = {c["headers"]["Authorization"] for c in fake.api_calls if c["path"].startswith("/items/")}
    assert len(tokens) == 1, "every call used the one refreshed token"


async def test_two_processes_refresh_once(aiohttp_client, fake_app, fake, database_url):
    first = await aiohttp_client(fake_app(database_url=database_url))
    second = await aiohttp_client(fake_app(database_url=database_url))
    ws = await create_workspace_with_key(first.server.app, plan="enterprise")
    connection_id = await _expired_connection(first, ws, fake)
    fake.refresh_delay = 0.3
    calls = [_call(api, ws, connection_id, n) for n in range(10) for api in (first, second)]
    responses = await asyncio.gather(*calls)
    assert [r.status for r in responses] == [200] * 20
    assert fake.refresh_calls == 1
