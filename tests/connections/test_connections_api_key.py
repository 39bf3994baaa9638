"""API-key connections against the fake provider: connect (validated), status, list, disconnect,
delete, health, credentials encrypted at rest, plan gating, tenant isolation."""

from __future__ import annotations

from sqlalchemy import text

from patchbay.core.appkeys import SERVICES
from patchbay.core.testing import create_workspace_with_key

KEY = "fake-api-key-123"  # FakeProvider.API_KEY


async def connect(api, ws, provider="fakekey", key=KEY, **extra):
    return await api.post(
        f"/connect/v1/providers/{provider}/connect", json={"credentials": {"apiKey": key, **extra}, "metadata": {"label": "main"}}, headers=ws["headers"]
    )


async def test_connect_validates_and_stores_encrypted(api, ws, fake):
    response = await connect(api, ws)
    assert response.status == 201, await response.text()
    body = await response.json()
    assert body["success"] is True and body["connectionId"]
    assert any(call["path"] == "/me" for call in fake.api_calls), "the key is proved with the health check"

    status = await (await api.get("/connect/v1/providers/fakekey/status", headers=ws["headers"])).json()
    assert status["status"] == "connected" and status["metadata"] == {"label": "main"} and status["connectedAt"].endswith("Z")

    async with api.server.app[SERVICES].db.session() as session:
        raw = (await session.execute(text("SELECT * FROM connections"))).mappings().one()
    assert KEY not in str(dict(raw)), "the API key is never stored in plain text"
    assert raw["credentials"].startswith("gAAAA")  # a Fernet token

    listed = await (await api.get("/connect/v1/connections?provider=fakekey", headers=ws["headers"])).json()
    assert listed["total"] == 1 and listed["data"][0]["connectionId"] == body["connectionId"]
    assert "credentials" not in listed["data"][0] and KEY not in str(listed)


async def test_rejected_key_is_not_stored(api, ws):
    response = await connect(api, ws, key="wrong")
    assert response.status == 400
    assert "Credentials rejected by Fake Key" in (await response.json())["message"]
    listed = await (await api.get("/connect/v1/connections", headers=ws["headers"])).json()
    assert listed["total"] == 0


async def test_validation_errors_and_oauth_provider(api, ws):
    missing = await api.post("/connect/v1/providers/fakekey/connect", json={"credentials": {}}, headers=ws["headers"])
    assert missing.status == 400 and "apiKey" in (await missing.json())["message"]
    oauth = await connect(api, ws, provider="fakeoauth")
    assert oauth.status == 400 and "/auth/fakeoauth/login" in (await oauth.json())["message"]
    unknown = await connect(api, ws, provider="nope")
    assert unknown.status == 404 and (await unknown.json())["message"] == "Provider not found: nope"
    assert (await api.post("/connect/v1/providers/fakekey/connect", json={"credentials": {"apiKey": KEY}})).status == 401


async def test_basic_query_and_client_credentials_modes(api, ws, fake):
    basic = await api.post("/connect/v1/providers/fakebasic/connect", json={"credentials": {"apiKey": "user", "apiSecret": KEY}}, headers=ws["headers"])
    assert basic.status == 201, await basic.text()
    query = await connect(api, ws, provider="fakequery")
    assert query.status == 201
    cc = await api.post(
        "/connect/v1/providers/fakecc/connect", json={"credentials": {"apiKey": "fake-client", "apiSecret": "fake-secret"}}, headers=ws["headers"]
    )
    assert cc.status == 201, await cc.text()
    assert fake.token_requests[-1]["grant_type"] == "client_credentials"
    bad_cc = await api.post("/connect/v1/providers/fakecc/connect", json={"credentials": {"apiKey": "x", "apiSecret": "y"}}, headers=ws["headers"])
    assert bad_cc.status == 400
    for provider, body in (("fakebasic", basic), ("fakequery", query), ("fakecc", cc)):
        connection_id = (await body.json())["connectionId"]
        proxied = await api.post(
            f"/connect/v1/proxy/{provider}", json={"method": "GET", "path": "/me"}, headers={**ws["headers"], "x-connection-id": connection_id}
        )
        assert proxied.status == 200, (provider, await proxied.text())
    assert fake.api_calls[-2]["query"] == {"api_key": KEY}


async def test_plan_limit_on_provider_count(aiohttp_client, fake_app):
    api = await aiohttp_client(fake_app())
    ws = await create_workspace_with_key(api.server.app, plan="free")  # free: 3 providers
    for provider, key in (("fakekey", KEY), ("fakequery", KEY)):
        assert (await connect(api, ws, provider=provider, key=key)).status == 201
    assert (
        await api.post("/connect/v1/providers/fakebasic/connect", json={"credentials": {"apiKey": "user", "apiSecret": KEY}}, headers=ws["headers"])
    ).status == 201
    again = await connect(api, ws, provider="fakekey")
    assert again.status == 201, "another connection of a connected provider does not count"
    over = await api.post(
        "/connect/v1/providers/fakecc/connect", json={"credentials": {"apiKey": "fake-client", "apiSecret": "fake-secret"}}, headers=ws["headers"]
    )
    assert over.status == 403
    assert (await over.json())["message"].startswith("Plan limit exceeded for providers: plan free allows 3;")
    login = await api.get("/auth/fakeoauth/login", headers={**ws["headers"], "Accept": "application/json"})
    assert login.status == 403


async def test_disconnect_delete_and_health(api, ws, fake):
    connection_id = (await (await connect(api, ws)).json())["connectionId"]
    check = await api.post(f"/connect/v1/connections/{connection_id}/check-health", headers=ws["headers"])
    assert check.status == 201
    assert (await check.json())["health"] == "healthy"
    health = await (await api.get("/connect/v1/connections/health", headers=ws["headers"])).json()
    assert health["data"][0]["health"] == "healthy" and health["summary"] == {"healthy": 1}

    fake.api_calls.clear()
    gone = await api.delete("/connect/v1/providers/fakekey/disconnect", headers=ws["headers"])
    assert (await gone.json())["disconnected"] == 1
    status = await (await api.get("/connect/v1/providers/fakekey/status", headers=ws["headers"])).json()
    assert status["status"] == "disconnected"
    proxied = await api.post("/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/me"}, headers={**ws["headers"], "x-connection-id": connection_id})
    assert proxied.status == 409 and not fake.api_calls
    async with api.server.app[SERVICES].db.session() as session:
        stored = (await session.execute(text("SELECT credentials FROM connections"))).scalar_one()
    assert KEY not in api.server.app[SERVICES].secrets.decrypt(stored)

    deleted = await api.delete(f"/connect/v1/connections/{connection_id}", headers=ws["headers"])
    assert deleted.status == 200
    assert (await api.get(f"/connect/v1/connections/{connection_id}", headers=ws["headers"])).status == 404


async def test_another_workspaces_connection_is_not_found(api, ws):
    connection_id = (await (await connect(api, ws)).json())["connectionId"]
    other = await create_workspace_with_key(api.server.app, name="Other")
    h = other["headers"]
    for method, path in (
        ("GET", f"/connect/v1/connections/{connection_id}"),
        ("DELETE", f"/connect/v1/connections/{connection_id}"),
        ("POST", f"/connect/v1/connections/{connection_id}/check-health"),
        ("GET", f"/connect/v1/connections/{connection_id}/audit"),
        ("GET", f"/api/connections/{connection_id}/token"),
    ):
        response = await api.request(method, path, headers=h)
        assert response.status == 404, (method, path, response.status)
    proxied = await api.post("/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/me"}, headers={**h, "x-connection-id": connection_id})
    assert proxied.status == 404
    listed = await (await api.get("/connect/v1/connections", headers=h)).json()
    assert listed["total"] == 0
    still = await api.get(f"/connect/v1/connections/{connection_id}", headers=ws["headers"])
    assert still.status == 200


async def test_public_provider_needs_no_credentials(api, ws, fake):
    created = await api.post("/connect/v1/providers/fakepublic/connect", json={"metadata": {"label": "public"}}, headers=ws["headers"])
    assert created.status == 201, await created.text()
    connection_id = (await created.json())["connectionId"]
    proxied = await api.post(
        "/connect/v1/proxy/fakepublic", json={"method": "GET", "path": "/open"}, headers={**ws["headers"], "x-connection-id": connection_id}
    )
    assert proxied.status == 401  # the fake API wants a credential; none was injected
    assert "Authorization" not in fake.api_calls[-1]["headers"]
