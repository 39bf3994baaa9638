"""Attack: a leaked API key that has been used on the proxy (so its verification is remembered in
this process) stops working the moment it is revoked, on both forms of the proxy, while the
workspace's other key keeps working."""

from __future__ import annotations

import asyncio

from patchbay.core.appkeys import SERVICES
from patchbay.core.security import service as credentials
from patchbay.core.security.api_keys import create_api_key, find_api_key
from patchbay.core.testing import create_workspace_with_key

KEY = "fake-api-key-123"  # FakeProvider.API_KEY


async def _leaked_key(api):
    """A workspace with a connection of the fake key provider and a second API key (the leaked one)."""
    app = api.server.app
    ws = await create_workspace_with_key(app, plan="enterprise")
    connected = await api.post("/connect/v1/providers/fakekey/connect", json={"credentials": {"apiKey": KEY}}, headers=ws["headers"])
    assert connected.status == 201, await connected.text()
    async with app[SERVICES].db.transaction() as session:
        leaked = await create_api_key(session, app[SERVICES].secrets, workspace_id=ws["workspace_id"], name="leaked")
    return ws, {"x-connection-id": (await connected.json())["connectionId"]}, leaked


async def test_a_revoked_key_stops_proxying_at_once(api):
    ws, connection, leaked = await _leaked_key(api)
    thief = {"x-api-key": leaked.key, **connection}

    async def statuses(headers) -> tuple[int, int]:
        envelope = await api.post("/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/me"}, headers=headers)
        passthrough = await api.get("/connect/v1/proxy/fakekey/me", headers=headers)
        return envelope.status, passthrough.status

    assert await statuses(thief) == (200, 200)  # verified and now remembered
    revoked = await api.delete(f"/connect/v1/api-keys/{leaked.record.id}", headers=ws["headers"])
    assert revoked.status == 200
    assert await statuses(thief) == (401, 401)
    assert await statuses({**ws["headers"], **connection}) == (200, 200)


async def test_a_key_revoked_while_its_verification_is_under_way_is_refused_once_revoked(api, monkeypatch):
    """The race: a request's read of the key started before the revocation (it sees the key
    active); requests sent after the revocation must not share that read nor what it found."""
    ws, connection, leaked = await _leaked_key(api)
    thief = {"x-api-key": leaked.key, **connection}
    reading, release, calls = asyncio.Event(), asyncio.Event(), []

    async def held_first_read(session, box, key):
        found = await find_api_key(session, box, key)
        calls.append(key)
        if key == leaked.key and len([k for k in calls if k == leaked.key]) == 1:
            reading.set()
            await asyncio.wait_for(release.wait(), 20)
        return found

    monkeypatch.setattr(credentials, "find_api_key", held_first_read)
    before = asyncio.create_task(api.get("/connect/v1/proxy/fakekey/me", headers=thief))
    await asyncio.wait_for(reading.wait(), 20)
    revoked = await api.delete(f"/connect/v1/api-keys/{leaked.record.id}", headers=ws["headers"])
    assert revoked.status == 200
    after = await asyncio.wait_for(api.get("/connect/v1/proxy/fakekey/me", headers=thief), 20)
    assert after.status == 401
    release.set()
    await asyncio.wait_for(before, 20)  # began before the revocation: either answer is fair
    again = await api.get("/connect/v1/proxy/fakekey/me", headers=thief)
    assert again.status == 401
