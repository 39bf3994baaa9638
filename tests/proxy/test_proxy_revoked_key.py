"""Attack: a leaked API key that has been used on the proxy (so its verification is remembered in
this process) stops working the moment it is revoked, on both forms of the proxy, while the
workspace's other key keeps working."""

from __future__ import annotations

from patchbay.core.appkeys import DB, SECRETS
from patchbay.core.security.api_keys import create_api_key
from patchbay.core.testing import create_workspace_with_key

KEY = "fake-api-key-123"  # FakeProvider.API_KEY


async def test_a_revoked_key_stops_proxying_at_once(api):
    app = api.server.app
    ws = await create_workspace_with_key(app, plan="enterprise")
    connected = await api.post("/connect/v1/providers/fakekey/connect", json={"credentials": {"apiKey": KEY}}, headers=ws["headers"])
    assert connected.status == 201, await connected.text()
    connection = {"x-connection-id": (await connected.json())["connectionId"]}
    async with app[DB].transaction() as session:
        leaked = await create_api_key(session, app[SECRETS], workspace_id=ws["workspace_id"], name="leaked")
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
