"""OAuth connections against the fake provider: login (state, PKCE), callback, single-use state,
provider errors, BYOA, token import and the fresh-token endpoint, refresh, invalid_grant, cooldown,
the token-refresh job and health."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import aiohttp
from sqlalchemy import text, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.models import Connection, OAuthState
from patchbay.core.testing import create_workspace_with_key, sign_access_token
from patchbay.core.timeutil import utcnow

RETURN_TO = "https://app.example.com/connected?x=1"


async def start_login(api, ws, **query):
    params = {"redirect_uri": RETURN_TO, "account_id": ws["workspace_id"], **query}
    response = await api.get("/auth/fakeoauth/login", params=params, headers=ws["headers"], allow_redirects=False)
    assert response.status == 302, await response.text()
    return response.headers["Location"]


async def authorize(url: str, **extra) -> tuple[str, dict]:
    """Visit the provider's authorization page (auto-approved) and answer the callback URL."""
    async with aiohttp.ClientSession() as session:
        async with session.get(url, params=extra, allow_redirects=False) as response:
            assert response.status == 302, await response.text()
            location = response.headers["Location"]
    return location, {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


async def connect_oauth(api, ws) -> str:
    location, query = await authorize(await start_login(api, ws))
    done = await api.get(urlsplit(location).path, params=query, allow_redirects=False)
    assert done.status == 302, await done.text()
    back = parse_qs(urlsplit(done.headers["Location"]).query)
    assert back["status"] == ["connected"], back
    return back["connectionId"][0]


async def expire(api, connection_id: str, seconds: int = -60) -> None:
    async with api.server.app[SERVICES].db.transaction() as session:
        await session.execute(update(Connection).where(Connection.id == connection_id).values(expires_at=utcnow() + timedelta(seconds=seconds)))
    api.server.app[SERVICES].connections.forget(connection_id)  # as if the cached copy had aged out


async def test_login_sends_state_and_pkce(api, ws, fake):
    url = await start_login(api, ws)
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert url.startswith(fake.base + "/authorize?")
    assert query["client_id"] == fake.CLIENT_ID and query["response_type"] == "code"
    assert query["redirect_uri"] == "http://127.0.0.1:8080/auth/fakeoauth/callback"
    assert query["scope"] == "read write"
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert "." in query["state"]


async def test_full_round_trip_and_refresh(api, ws, fake):
    connection_id = await connect_oauth(api, ws)
    assert fake.token_requests[-1]["code_verifier"], "PKCE verifier sent with the code"
    async with api.server.app[SERVICES].db.session() as session:
        raw = (await session.execute(text("SELECT credentials, expires_at FROM connections"))).one()
    assert "at-" not in raw[0] and "rt-" not in raw[0] and raw[1] is not None

    proxied = await api.post("/connect/v1/proxy/fakeoauth", json={"method": "GET", "path": "/me"}, headers={**ws["headers"], "x-connection-id": connection_id})
    assert proxied.status == 200
    first = fake.api_calls[-1]["headers"]["Authorization"]

    await expire(api, connection_id)
    proxied = await api.post("/connect/v1/proxy/fakeoauth", json={"method": "GET", "path": "/me"}, headers={**ws["headers"], "x-connection-id": connection_id})
    assert proxied.status == 200
    assert fake.refresh_calls == 1
    assert fake.api_calls[-1]["headers"]["Authorization"] != first

    token = await (await api.get(f"/api/connections/{connection_id}/token", headers=ws["headers"])).json()
    assert token["accessToken"] == fake.api_calls[-1]["headers"]["Authorization"][7:]
    assert fake.refresh_calls == 1, "a fresh token is not refreshed again"


async def test_401_refreshes_once_and_retries(api, ws, fake):
    connection_id = await connect_oauth(api, ws)
    fake.access_tokens.clear()  # the provider forgets the token before its expiry
    proxied = await api.post("/connect/v1/proxy/fakeoauth", json={"method": "GET", "path": "/me"}, headers={**ws["headers"], "x-connection-id": connection_id})
    assert proxied.status == 200
    assert fake.refresh_calls == 1
    assert [c["path"] for c in fake.api_calls[-2:]] == ["/me", "/me"]


async def test_state_is_single_use_and_signed(api, ws):
    location, query = await authorize(await start_login(api, ws))
    path = urlsplit(location).path
    assert (await api.get(path, params=query, allow_redirects=False)).status == 302
    replay = await api.get(path, params=query, allow_redirects=False)
    assert replay.status == 400 and "already used" in await replay.text()
    state_id = query["state"].split(".")[0]
    forged = await api.get(path, params={"code": "x", "state": state_id + ".AAAA"}, allow_redirects=False)
    assert forged.status == 400
    other_provider = await api.get("/auth/fakekey/callback", params=query, allow_redirects=False)
    assert other_provider.status == 400


async def test_provider_error_goes_back_cleanly(api, ws):
    location, query = await authorize(await start_login(api, ws), deny="1")
    response = await api.get(urlsplit(location).path, params=query, allow_redirects=False)
    assert response.status == 302
    back = urlsplit(response.headers["Location"])
    values = parse_qs(back.query)
    assert back.netloc == "app.example.com" and values["x"] == ["1"]
    assert values["status"] == ["error"] and values["error"] == ["access_denied"]
    assert values["error_description"] == ["Fake OAuth: The user said no"]


async def test_login_by_token_in_query_and_account_check(api, ws):
    app = api.server.app
    token = await sign_access_token(app, {"sub": "u1", "organization_id": ws["workspace_id"], "permissions": ["connections.write"]})
    response = await api.get("/auth/fakeoauth/login", params={"token": token, "response": "json"})
    assert response.status == 200 and (await response.json())["authorizationUrl"].startswith("http://127.0.0.1")
    other = await create_workspace_with_key(app, name="Other")
    wrong = await api.get("/auth/fakeoauth/login", params={"account_id": other["workspace_id"]}, headers=ws["headers"], allow_redirects=False)
    assert wrong.status == 404
    assert (await api.get("/auth/fakeoauth/login", allow_redirects=False)).status == 401
    assert (await api.get("/auth/fakekey/login", headers=ws["headers"], allow_redirects=False)).status == 400


async def test_byoa_credentials(aiohttp_client, fake_app, fake):
    api = await aiohttp_client(fake_app(providers={}))  # no deployment app
    ws = await create_workspace_with_key(api.server.app, plan="enterprise")
    none = await api.get("/auth/fakeoauth/login", headers=ws["headers"], allow_redirects=False)
    assert none.status == 400 and "No OAuth app" in (await none.json())["message"]
    fake.clients["byoa-client"] = "byoa-secret"
    saved = await api.post(
        "/byoa/fakeoauth/credentials", json={"clientId": "byoa-client", "clientSecret": "byoa-secret", "scopes": ["read"]}, headers=ws["headers"]
    )
    assert saved.status == 201
    status = await (await api.get("/byoa/fakeoauth/credentials", headers=ws["headers"])).json()
    assert status["configured"] is True and status["clientId"] == "byoa-client" and "byoa-secret" not in str(status)
    async with api.server.app[SERVICES].db.session() as session:
        assert "byoa-secret" not in str((await session.execute(text("SELECT * FROM byoa_credentials"))).one())
    url = await start_login(api, ws)
    query = parse_qs(urlsplit(url).query)
    assert query["client_id"] == ["byoa-client"] and query["scope"] == ["read"]
    location, params = await authorize(url)
    assert (await api.get(urlsplit(location).path, params=params, allow_redirects=False)).status == 302
    assert fake.token_requests[-1]["client_id"] == "byoa-client"
    assert (await api.delete("/byoa/fakeoauth/credentials", headers=ws["headers"])).status == 200
    assert (await (await api.get("/byoa/fakeoauth/credentials", headers=ws["headers"])).json())["configured"] is False


async def test_import_tokens_then_fresh_token(api, ws, fake):
    body = fake._issue()
    imported = await api.post(
        "/api/connections/import",
        json={
            "providerType": "fakeoauth",
            "credentials": {"accessToken": body["access_token"], "refreshToken": body["refresh_token"], "expiresAt": "2000-01-01T00:00:00Z"},
        },
        headers=ws["headers"],
    )
    assert imported.status == 201, await imported.text()
    connection_id = (await imported.json())["connectionId"]
    token = await (await api.get(f"/api/connections/{connection_id}/token", headers=ws["headers"])).json()
    assert fake.refresh_calls == 1 and token["accessToken"] != body["access_token"]
    assert token["accessToken"] in fake.access_tokens
    bad = await api.post("/api/connections/import", json={"providerType": "fakekey", "credentials": {"accessToken": "x"}}, headers=ws["headers"])
    assert bad.status == 400


async def test_invalid_grant_marks_invalid_and_cooldown(api, ws, fake):
    connection_id = await connect_oauth(api, ws)
    fake.refresh_error = "temporarily_unavailable"
    refreshed = await api.post(f"/auth/fakeoauth/refresh/{ws['workspace_id']}", headers=ws["headers"])
    assert refreshed.status == 201
    assert (await refreshed.json())["connections"][0]["refreshed"] is False
    assert fake.refresh_calls == 1
    await api.post(f"/auth/fakeoauth/refresh/{ws['workspace_id']}", headers=ws["headers"])
    assert fake.refresh_calls == 1, "no second call to the provider during the cooldown"

    async with api.server.app[SERVICES].db.transaction() as session:
        await session.execute(update(Connection).values(refresh_retry_at=None))
    fake.refresh_error = "invalid_grant"
    result = await (await api.post(f"/auth/fakeoauth/refresh/{ws['workspace_id']}", headers=ws["headers"])).json()
    assert result["connections"][0]["status"] == "invalid"
    connection = await (await api.get(f"/connect/v1/connections/{connection_id}", headers=ws["headers"])).json()
    assert connection["status"] == "invalid" and "refresh refused" in connection["refreshError"]
    health = await (await api.get("/connect/v1/connections/health", headers=ws["headers"])).json()
    assert health["data"][0]["health"] == "invalid"
    proxied = await api.post("/connect/v1/proxy/fakeoauth", json={"method": "GET", "path": "/me"}, headers={**ws["headers"], "x-connection-id": connection_id})
    assert proxied.status == 409


async def test_token_refresh_job_refreshes_ahead_of_expiry(api, ws, fake):
    soon = await connect_oauth(api, ws)
    later = await connect_oauth(api, ws)
    await start_login(api, ws)  # abandoned: its state expires unused
    async with api.server.app[SERVICES].db.transaction() as session:
        await session.execute(update(OAuthState).values(expires_at=utcnow() - timedelta(seconds=1)))
    await expire(api, soon, seconds=600)  # within the 15 minute buffer
    await expire(api, later, seconds=3600)
    summary = await api.server.app[SERVICES].cron.jobs["token-refresh"].run(api.server.app[SERVICES])
    assert summary == {"due": 1, "refreshed": 1, "failed": 0, "invalid": 0, "expiredLogins": 1}
    assert fake.refresh_calls == 1
    connection = await (await api.get(f"/connect/v1/connections/{soon}", headers=ws["headers"])).json()
    assert connection["lastRefreshedAt"] is not None


async def test_connection_health_job_and_disconnect_revokes(api, ws, fake):
    connection_id = await connect_oauth(api, ws)
    summary = await api.server.app[SERVICES].cron.jobs["connection-health"].run(api.server.app[SERVICES])
    assert summary == {"checked": 1, "healthy": 1}
    fake.access_tokens.clear()
    fake.refresh_error = "invalid_grant"
    async with api.server.app[SERVICES].db.transaction() as session:
        await session.execute(update(Connection).values(last_health_check_at=None))
    summary = await api.server.app[SERVICES].cron.jobs["connection-health"].run(api.server.app[SERVICES])
    assert summary["checked"] == 1 and summary.get("invalid", 0) + summary.get("unhealthy", 0) == 1
    fake.refresh_error = None
    other = await connect_oauth(api, ws)
    gone = await (await api.delete("/connect/v1/providers/fakeoauth/disconnect", headers=ws["headers"])).json()
    assert gone["success"] is True and gone["revoked"] >= 1 and fake.revoked
    assert connection_id != other


async def test_metadata_on_login_and_patch(api, ws):
    url = await start_login(api, ws, metadata='{"page_id": "p-1"}')
    location, query = await authorize(url)
    done = await api.get(urlsplit(location).path, params=query, allow_redirects=False)
    connection_id = parse_qs(urlsplit(done.headers["Location"]).query)["connectionId"][0]
    connection = await (await api.get(f"/connect/v1/connections/{connection_id}", headers=ws["headers"])).json()
    assert connection["metadata"] == {"page_id": "p-1"}
    patched = await api.patch(f"/connect/v1/connections/{connection_id}", json={"metadata": {"page_id": None, "label": "x"}}, headers=ws["headers"])
    assert (await patched.json())["metadata"] == {"label": "x"}
    bad = await api.get("/auth/fakeoauth/login", params={"metadata": "[1]"}, headers=ws["headers"], allow_redirects=False)
    assert bad.status == 400
    other = await create_workspace_with_key(api.server.app, name="Other")
    assert (await api.patch(f"/connect/v1/connections/{connection_id}", json={"metadata": {}}, headers=other["headers"])).status == 404


async def test_a_login_started_before_a_secret_key_rotation_completes_after_it(api, ws):
    from patchbay.core.security.secrets import SecretBox, load_or_create_secrets

    location, query = await authorize(await start_login(api, ws))  # state signed with the old key
    settings = api.server.app[SERVICES].settings
    api.server.app[SERVICES].secrets = SecretBox(["a new first key", *load_or_create_secrets(settings.secret_key, settings.data_dir)])
    done = await api.get(urlsplit(location).path, params=query, allow_redirects=False)
    assert parse_qs(urlsplit(done.headers["Location"]).query)["status"] == ["connected"]
