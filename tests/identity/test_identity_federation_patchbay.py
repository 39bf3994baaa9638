"""The built-in OIDC federation plugin against a second patchbay as the upstream provider: the
npm-free round trip (test_identity_federation.py uses oauth2-mock-server)."""

import shutil
import socket
from urllib.parse import parse_qs, urlencode, urlsplit

import aiohttp

from patchbay.core.app import create_app
from patchbay.core.appkeys import SERVICES
from patchbay.core.users.service import create_user

REDIRECT = "http://localhost:8768/cb"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def start(aiohttp_server, settings):
    port = free_port()
    settings.base_url = f"http://127.0.0.1:{port}"
    app = create_app(settings, background=False)
    await aiohttp_server(app, port=port)
    return app, settings.base_url


async def test_round_trip_through_a_second_patchbay(aiohttp_server, make_settings, sqlite_template, tmp_path, pkce, walk):
    shutil.copy(sqlite_template, tmp_path / "upstream.db")
    upstream, upstream_url = await start(aiohttp_server, make_settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'upstream.db'}"))
    async with upstream[SERVICES].db.transaction() as session:
        user = await create_user(session, email="grace@upstream.example", password="upstream password", name="Grace Hopper")
        user.email_verified = True
    settings = make_settings()
    port = free_port()
    callback = f"http://127.0.0.1:{port}/api/v1/oidc/federation/callback"
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.post(f"{upstream_url}/api/v1/oidc/register", json={"client_name": "Downstream", "redirect_uris": [callback]}) as response:
            upstream_client = await response.json()
        settings.federation = {
            "upstream": {"issuer": upstream_url, "client_id": upstream_client["client_id"], "client_secret": upstream_client["client_secret"]}
        }
        settings.base_url = f"http://127.0.0.1:{port}"
        downstream = create_app(settings, background=False)
        await aiohttp_server(downstream, port=port)
        base = settings.base_url
        async with http.post(f"{base}/api/v1/oidc/register", json={"client_name": "RP", "redirect_uris": [REDIRECT]}) as response:
            client = await response.json()
        verifier, challenge = pkce.pair()
        query = {
            "client_id": client["client_id"],
            "redirect_uri": REDIRECT,
            "response_type": "code",
            "scope": "openid email profile",
            "state": "s1",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "idp": "upstream",
        }
        async with http.get(f"{base}/api/v1/oidc/authorize?{urlencode(query)}", allow_redirects=False) as response:
            assert response.headers["Location"].startswith(f"{upstream_url}/api/v1/oidc/authorize")
            first = response.headers["Location"]
        final = await walk(http, first, REDIRECT, "grace@upstream.example", "upstream password")
        answer = {k: v[0] for k, v in parse_qs(urlsplit(final).query).items()}
        assert answer["state"] == "s1" and answer["iss"] == base
        async with http.post(
            f"{base}/api/v1/oidc/token",
            data={
                "grant_type": "authorization_code",
                "code": answer["code"],
                "redirect_uri": REDIRECT,
                "client_id": client["client_id"],
                "client_secret": client["client_secret"],
                "code_verifier": verifier,
            },
        ) as response:
            tokens = await response.json()
        async with http.get(f"{base}/api/v1/oidc/userinfo", headers={"Authorization": f"Bearer {tokens['access_token']}"}) as response:
            info = await response.json()
    assert info["email"] == "grace@upstream.example" and info["name"] == "Grace Hopper"
    assert info["sub"] != user.id  # a local user of the downstream, linked to the upstream subject
