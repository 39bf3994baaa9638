"""The full OAuth round trip against a real OAuth 2 server from elsewhere, oauth2-mock-server (npm):
login -> provider -> callback -> stored -> proxy -> expiry -> refresh -> proxy. The proxied API is
a local server that accepts only access tokens signed by that OAuth server (checked against its
JWKS), so a call succeeds only with a token the server really issued. Needs Node.js and npm (the
package is installed on first use into tests/connections/node); skips otherwise."""

from __future__ import annotations

import asyncio
import json
import os
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from aiohttp import web
from joserfc import jwt
from joserfc.jwk import KeySet
from sqlalchemy import update

from patchbay import Provider, hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.models import Connection
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow
from tests.node_peers import installed

NODE_DIR = Path(__file__).with_name("node")


@pytest.fixture(scope="session")
def node_packages() -> Path:
    return installed(NODE_DIR, "the OAuth round trip needs Node.js and npm (oauth2-mock-server)")


@pytest.fixture
async def oauth_server(node_packages):
    process = await asyncio.create_subprocess_exec(
        "node", str(node_packages / "oauth_server.mjs"), cwd=node_packages, stdout=asyncio.subprocess.PIPE, env=dict(os.environ)
    )
    line = await asyncio.wait_for(process.stdout.readline(), 30)
    url = json.loads(line)["url"].replace("localhost", "127.0.0.1")
    events: list[dict] = []

    async def read() -> None:
        while line := await process.stdout.readline():
            events.append(json.loads(line))

    reader = asyncio.create_task(read())
    yield url, events
    process.terminate()
    await process.wait()
    reader.cancel()


@pytest.fixture
async def protected_api(oauth_server):
    """An API accepting only unexpired RS256 tokens of the OAuth server; it records their ``jti``."""
    url, _ = oauth_server
    seen: list[str] = []
    async with aiohttp.ClientSession() as session, session.get(f"{url}/jwks") as response:
        keys = KeySet.import_key_set(await response.json())

    async def me(request: web.Request) -> web.Response:
        header = request.headers.get("Authorization", "")
        try:
            token = jwt.decode(header.removeprefix("Bearer "), keys, algorithms=["RS256"])
        except Exception:
            return web.json_response({"message": "invalid token"}, status=401)
        if token.claims.get("exp", 0) < time.time():
            return web.json_response({"message": "expired"}, status=401)
        seen.append(header)
        return web.json_response({"sub": token.claims.get("sub"), "scope": token.claims.get("scope")})

    app = web.Application()
    app.router.add_get("/api/me", me)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}", seen
    await runner.cleanup()


class MockPack:
    def __init__(self, server: str, api: str) -> None:
        self.server, self.api = server, api

    @hookimpl
    def register_providers(self):
        return [
            Provider(
                name="mockoauth",
                display_name="Mock OAuth",
                category="productivity",
                auth_mode="oauth2",
                authorization_url="{server}/authorize",
                token_url="{server}/token",
                revocation_url="{server}/revoke",
                api_base_url="{api}/api",
                scopes=("openid", "offline_access"),
                pkce=True,
                capabilities=("oauth", "proxy"),
                connection_params=("server", "api"),
                connection_param_defaults={"server": self.server, "api": self.api},
            )
        ]


async def test_oauth_round_trip_with_oauth2_mock_server(aiohttp_client, make_app, oauth_server, protected_api):
    server_url, events = oauth_server
    api_url, seen = protected_api
    app = make_app(plugins=[MockPack(server_url, api_url)], providers={"mockoauth": {"client_id": "patchbay-test", "client_secret": "s3cret"}})
    api = await aiohttp_client(app)
    ws = await create_workspace_with_key(app, plan="enterprise")

    login = await api.get("/auth/mockoauth/login", params={"redirect_uri": "https://app.example.com/done"}, headers=ws["headers"], allow_redirects=False)
    assert login.status == 302, await login.text()
    async with aiohttp.ClientSession() as browser, browser.get(login.headers["Location"], allow_redirects=False) as consent:
        assert consent.status == 302
        callback = urlsplit(consent.headers["Location"])
    assert callback.path == "/auth/mockoauth/callback"
    done = await api.get(callback.path + "?" + callback.query, allow_redirects=False)
    assert done.status == 302, await done.text()
    back = parse_qs(urlsplit(done.headers["Location"]).query)
    assert back["status"] == ["connected"]
    connection_id = back["connectionId"][0]
    assert [e["grant"] for e in events] == ["authorization_code"], "the code was exchanged (with the PKCE verifier the server checks)"

    headers = {**ws["headers"], "x-connection-id": connection_id}
    first = await api.post("/connect/v1/proxy/mockoauth", json={"method": "GET", "path": "/me"}, headers=headers)
    assert first.status == 200, await first.text()

    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(Connection).where(Connection.id == connection_id).values(expires_at=utcnow() - timedelta(seconds=5)))
    app[SERVICES].connections.forget(connection_id)
    second = await api.post("/connect/v1/proxy/mockoauth", json={"method": "GET", "path": "/me"}, headers=headers)
    assert second.status == 200, await second.text()
    for _ in range(50):
        if len(events) >= 2:
            break
        await asyncio.sleep(0.05)
    assert [e["grant"] for e in events] == ["authorization_code", "refresh_token"]
    assert len(seen) == 2 and seen[0] != seen[1], "the second call carried the refreshed token"
    connection = await (await api.get(f"/connect/v1/connections/{connection_id}", headers=ws["headers"])).json()
    assert connection["status"] == "connected" and connection["lastRefreshedAt"] is not None
