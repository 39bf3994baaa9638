"""The OAuth routes' forms, as /openapi.json declares them, are what they read (issue 17): the begin
confirmation built from its declared ``state`` goes on to the provider, and the provider's
deauthorization callback built from its declared ``signed_request`` disconnects the user it names,
on SQLite and PostgreSQL."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from patchbay.core.testing import create_workspace_with_key
from tests.connections.test_connections_deauthorize import signed_request
from tests.connections.test_connections_oauth_binding import ORIGIN
from tests.core.openapi_forms import Documented


async def test_the_begin_and_deauthorize_forms_are_the_declared_ones(aiohttp_client, fake_app, fake, database_url):
    api = await aiohttp_client(fake_app(database_url=database_url))
    ws = await create_workspace_with_key(api.server.app, plan="enterprise")
    docs = Documented(await (await api.get("/openapi.json")).json())

    login = await api.get("/auth/fakeoauth/login", params={"response": "json"}, headers=ws["headers"])
    begin = (await login.json())["authorizationUrl"]
    state = parse_qs(urlsplit(begin).query)["state"][0]
    page = await api.get("/auth/fakeoauth/begin", params=docs.query("GET", "/auth/{providerType}/begin", state=state))
    assert page.status == 200
    confirmed = await api.post(
        "/auth/fakeoauth/begin", data=docs.form("POST", "/auth/{providerType}/begin", state=state), headers={"Origin": ORIGIN}, allow_redirects=False
    )
    assert confirmed.status == 302 and confirmed.headers["Location"].startswith(fake.base)

    tokens = fake._issue()
    imported = await api.post(
        "/api/connections/import",
        headers=ws["headers"],
        json={
            "providerType": "fakeoauth",
            "metadata": {"user_id": "u-1"},
            "credentials": {"accessToken": tokens["access_token"], "refreshToken": tokens["refresh_token"]},
        },
    )
    assert imported.status < 300, await imported.text()
    callback = docs.form(
        "POST", "/auth/{providerType}/deauthorize", signed_request=signed_request({"user_id": "u-1", "algorithm": "HMAC-SHA256"}, fake.CLIENT_SECRET)
    )
    done = await api.post("/auth/fakeoauth/deauthorize", data=callback)
    assert done.status == 200 and (await done.json())["disconnected"] == 1
