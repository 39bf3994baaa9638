"""Concurrent calls on an expired token cause exactly one refresh at the provider, within one
process (asyncio lock) and across processes (the database lease): two apps over one database stand
for two processes, each with its own locks and cache. The fake provider rotates refresh tokens, so a
second refresh would fail with invalid_grant."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from patchbay.core.testing import create_workspace_with_key

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)


async def _expired_connection(api, ws, fake) -> str:
    tokens = fake._issue()
    fake.access_tokens.pop(tokens["access_token"])  # the provider no longer accepts it
    response = await api.post(
        "/api/connections/import",
        json={
            "providerType": "fakeoauth",
            "credentials": {"accessToken": tokens["access_token"], "refreshToken": tokens["refresh_token"], "expiresAt": 946684800},
        },
        headers=ws["headers"],
    )
    assert response.status == 201, await response.text()
    return (await response.json())["connectionId"]


async def _call(api, ws, connection_id, n):
    return await api.post(
        "/connect/v1/proxy/fakeoauth", json={"method": "GET", "path": f"/items/{n}"}, headers={**ws["headers"], "x-connection-id": connection_id}
    )


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


@pytest.mark.slow  # about 2 s (setup and call)
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


@pytest.mark.slow  # worker processes of their own
async def test_two_os_processes_refresh_once(aiohttp_client, fake_app, fake, pg_url, tmp_path):
    """Two real processes on PostgreSQL, each with 10 concurrent refreshes of one connection holding
    the token the provider refused: one refresh call at the provider, and both processes end with
    its token. (SQLite is covered by the two-app test above.)"""
    database_url = pg_url
    api = await aiohttp_client(fake_app(database_url=database_url))
    ws = await create_workspace_with_key(api.server.app, plan="enterprise")
    connection_id = await _expired_connection(api, ws, fake)
    token = await (await api.get(f"/connect/v1/connections/{connection_id}", headers=ws["headers"])).json()
    assert token["status"] == "connected"
    from patchbay.core.appkeys import SERVICES
    from patchbay.core.connections.store import load_state

    stale = (await load_state(api.server.app[SERVICES], connection_id, workspace_id=ws["workspace_id"])).access_token
    fake.refresh_delay = 0.5
    worker = Path(__file__).with_name("refresh_worker.py")
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(worker),
            database_url,
            str(tmp_path / f"data{n}"),
            fake.base,
            ws["workspace_id"],
            connection_id,
            stale,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for n in range(2)
    ]
    outputs = [await asyncio.wait_for(p.communicate(), 60) for p in processes]
    for process, (_out, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err.decode()[-2000:]
    tokens = [json.loads(out.decode().strip().splitlines()[-1])["tokens"] for out, _ in outputs]
    assert fake.refresh_calls == 1
    assert tokens[0] == tokens[1] and len(tokens[0]) == 1 and tokens[0][0] != stale
