"""The limits of 8B, keyed as stated, with the 429 body and headers of 7B; on PostgreSQL the
counters are shared by every process."""

import pytest

from patchbay.core.app import create_app

TIGHT = {
    "oidc_token": "2/minute",
    "oidc_authorize": "2/minute",
    "oidc_introspect": "2/minute",
    "oidc_revoke": "2/minute",
    "oidc_userinfo": "2/minute",
    "oidc_register": "2/minute",
    "connect_api": "off",
}


async def assert_throttled(response, limit=2):
    assert response.status == 429
    assert await response.json() == {"error": "temporarily_unavailable", "error_description": "Rate limit exceeded"}
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    assert response.headers["X-RateLimit-Limit"] == str(limit)
    assert response.headers["X-RateLimit-Remaining"] == "0"


async def test_token_limit_is_per_client(make_idp):
    idp = await make_idp(rate_limits={**TIGHT, "oidc_register": "off"})
    first = await idp.register(grant_types=["client_credentials"], scope="openid")
    second = await idp.register(grant_types=["client_credentials"], scope="openid")
    ok = await idp.token(first, grant_type="client_credentials")
    assert ok.status == 200 and ok.headers["X-RateLimit-Limit"] == "2" and ok.headers["X-RateLimit-Remaining"] == "1"
    await idp.token(first, grant_type="client_credentials")
    await assert_throttled(await idp.token(first, grant_type="client_credentials"))
    assert (await idp.token(second, grant_type="client_credentials")).status == 200


async def test_introspect_and_revoke_limits_are_per_client(make_idp):
    idp = await make_idp(rate_limits={**TIGHT, "oidc_register": "off"})
    a = await idp.register(grant_types=["client_credentials"], scope="openid")
    b = await idp.register(grant_types=["client_credentials"], scope="openid")
    for path in ("/api/v1/oidc/introspect", "/api/v1/oidc/revoke"):
        for _ in range(2):
            response = await idp.http.post(path, data={"client_id": a["client_id"], "client_secret": a["client_secret"], "token": "x"})
            assert response.status == 200
        await assert_throttled(await idp.http.post(path, data={"client_id": a["client_id"], "client_secret": a["client_secret"], "token": "x"}))
        assert (await idp.http.post(path, data={"client_id": b["client_id"], "client_secret": b["client_secret"], "token": "x"})).status == 200


async def test_register_and_authorize_limits_are_per_ip(make_idp):
    idp = await make_idp(rate_limits=TIGHT)
    client = await idp.register()
    await idp.register()
    response = await idp.http.post("/api/v1/oidc/register", json={"client_name": "x", "redirect_uris": [idp.redirect]})
    await assert_throttled(response)
    for _ in range(2):
        assert (await idp.authorize(client)).status == 302
    await assert_throttled(await idp.authorize(client))


async def test_userinfo_limit_is_per_token(make_idp):
    idp = await make_idp(rate_limits={**TIGHT, "oidc_authorize": "off", "oidc_token": "off"})
    client = await idp.register()
    first = await idp.tokens(client)
    second = await idp.tokens(client)
    headers = {"Authorization": f"Bearer {first['access_token']}"}
    for _ in range(2):
        assert (await idp.http.get("/api/v1/oidc/userinfo", headers=headers)).status == 200
    await assert_throttled(await idp.http.get("/api/v1/oidc/userinfo", headers=headers))
    assert (await idp.http.get("/api/v1/oidc/userinfo", headers={"Authorization": f"Bearer {second['access_token']}"})).status == 200


async def test_limits_are_shared_between_processes_on_postgresql(make_idp, pg_url, make_settings, aiohttp_client, whole_clock_minute):
    idp = await make_idp(database_url=pg_url, rate_limits={**TIGHT, "oidc_register": "off"})
    client = await idp.register(grant_types=["client_credentials"], scope="openid")
    other_process = await aiohttp_client(create_app(make_settings(database_url=pg_url, rate_limits={**TIGHT, "oidc_register": "off"}), background=False))
    form = {"grant_type": "client_credentials", "client_id": client["client_id"], "client_secret": client["client_secret"]}
    assert (await idp.http.post("/api/v1/oidc/token", data=form)).status == 200
    assert (await other_process.post("/api/v1/oidc/token", data=form)).status == 200
    await assert_throttled(await idp.http.post("/api/v1/oidc/token", data=form))
    await assert_throttled(await other_process.post("/api/v1/oidc/token", data=form))


@pytest.mark.parametrize("value", ["off"])
async def test_limits_can_be_turned_off(make_idp, value):
    idp = await make_idp(rate_limits={**TIGHT, "oidc_register": value})
    for _ in range(4):
        await idp.register()
