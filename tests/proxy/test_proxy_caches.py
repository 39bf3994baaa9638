"""The proxy's per-process caches never outlive a change: a deleted, disconnected or renewed
connection takes effect at once in the process that made the change and within the documented
cache lifetime in another one; audit rows still buffered are all written at a graceful shutdown."""

from __future__ import annotations

import asyncio
import time

import pytest
from sqlalchemy import func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections import runtime as connections_runtime
from patchbay.core.connections.models import ProxyCallLog
from patchbay.core.connections.service import connect_with_api_key
from patchbay.core.storage.db import Database
from patchbay.core.testing import create_workspace_with_key

KEY = "fake-api-key-123"  # FakeProvider.API_KEY
CALL = {"method": "GET", "path": "/me"}


async def _connected(api) -> tuple[dict, str, str]:
    """Headers of proxy calls, the connection's id and its workspace's."""
    ws = await create_workspace_with_key(api.server.app, plan="enterprise")
    response = await api.post("/connect/v1/providers/fakekey/connect", json={"credentials": {"apiKey": KEY}}, headers=ws["headers"])
    assert response.status == 201, await response.text()
    connection_id = (await response.json())["connectionId"]
    return {**ws["headers"], "x-connection-id": connection_id}, connection_id, ws["workspace_id"]


async def _proxy_status(api, headers) -> int:
    return (await api.post("/connect/v1/proxy/fakekey", json=CALL, headers=headers)).status


async def test_a_deleted_connection_stops_at_once(api):
    headers, connection_id, _ = await _connected(api)
    assert await _proxy_status(api, headers) == 200  # now cached
    assert (await api.delete(f"/connect/v1/connections/{connection_id}", headers=headers)).status == 200
    assert await _proxy_status(api, headers) == 404


async def test_a_disconnected_connection_stops_at_once(api):
    headers, _, _ = await _connected(api)
    assert await _proxy_status(api, headers) == 200
    assert (await api.delete("/connect/v1/providers/fakekey/disconnect", headers=headers)).status == 200
    assert await _proxy_status(api, headers) == 409


async def test_renewed_credentials_are_injected_at_once(api, fake):
    headers, connection_id, workspace_id = await _connected(api)
    assert await _proxy_status(api, headers) == 200
    await connect_with_api_key(
        api.server.app[SERVICES],
        workspace_id=workspace_id,
        provider_name="fakekey",
        credentials={"apiKey": "renewed-key"},
        reconnect_id=connection_id,
        validate=False,
    )
    await _proxy_status(api, headers)
    assert fake.api_calls[-1]["headers"]["Authorization"] == "Bearer renewed-key"


@pytest.mark.slow  # about 5 s (setup and call)
async def test_another_process_stops_using_a_deleted_connection_within_the_cache_lifetime(aiohttp_client, fake_app):
    first = await aiohttp_client(fake_app())
    second = await aiohttp_client(fake_app())  # another process: its own engine and caches, the same database
    headers, connection_id, _ = await _connected(first)
    assert await _proxy_status(second, headers) == 200  # now cached there

    assert (await first.delete(f"/connect/v1/connections/{connection_id}", headers=headers)).status == 200
    deadline = time.monotonic() + connections_runtime.CACHE_SECONDS + 5  # the documented lifetime, plus slack for a loaded machine
    status = 200
    while status == 200 and time.monotonic() < deadline:
        status = await _proxy_status(second, headers)
        if status == 200:
            await asyncio.sleep(0.2)
    assert status == 404


async def test_buffered_audit_rows_are_all_written_at_a_graceful_shutdown(aiohttp_client, fake_app, monkeypatch):
    monkeypatch.setattr(connections_runtime, "AUDIT_FLUSH_SECONDS", 3600.0)  # no timed write before the shutdown
    api = await aiohttp_client(fake_app())
    headers, connection_id, _ = await _connected(api)
    calls = 25
    for _ in range(calls):
        assert await _proxy_status(api, headers) == 200
    database_url = api.server.app[SERVICES].settings.resolved_database_url
    await api.close()  # the app's cleanup, as on SIGTERM

    db = Database(database_url)
    try:
        async with db.session() as session:
            written = await session.scalar(select(func.count()).select_from(ProxyCallLog).where(ProxyCallLog.connection_id == connection_id))
    finally:
        await db.close()
    assert written == calls + 1  # and the connect's validation call


@pytest.mark.slow  # about 5 s (the key cache's lifetime)
async def test_another_process_stops_accepting_a_revoked_key_within_the_cache_lifetime(aiohttp_client, fake_app):
    from patchbay.core.security import service as credentials

    first = await aiohttp_client(fake_app())
    second = await aiohttp_client(fake_app())  # another process: its own verified-key cache, the same database
    headers, _, _ = await _connected(first)
    listed = await (await first.get("/connect/v1/api-keys", headers=headers)).json()
    (key_id,) = [key["id"] for key in (listed["data"] if isinstance(listed, dict) else listed)]
    assert await _proxy_status(second, headers) == 200  # the key is now verified and remembered there

    assert (await first.delete(f"/connect/v1/api-keys/{key_id}", headers=headers)).status == 200
    assert await _proxy_status(first, headers) == 401  # at once where it was revoked
    deadline = time.monotonic() + credentials.API_KEY_CACHE_SECONDS + 5  # the documented lifetime, plus slack for a loaded machine
    status = 200
    while status == 200 and time.monotonic() < deadline:
        status = await _proxy_status(second, headers)
        if status == 200:
            await asyncio.sleep(0.2)
    assert status == 401
