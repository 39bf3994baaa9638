"""Federated login round trip (4.23 ``idp`` / ``kc_idp_hint``): a live ``patchbay serve`` sends the
browser to a real upstream OpenID provider (oauth2-mock-server), verifies its ID token, links or
creates the user and resumes the original authorization."""

import json
import subprocess
from urllib.parse import parse_qs, urlencode, urlsplit

import aiohttp
import pytest


@pytest.fixture
def upstream(node_peers):
    process = subprocess.Popen(["node", str(node_peers / "upstream_idp.mjs")], stdout=subprocess.PIPE, text=True, cwd=node_peers)
    issuer = json.loads(process.stdout.readline())["issuer"]
    yield issuer
    process.terminate()
    process.wait(timeout=10)


async def test_federated_login_round_trip_links_the_user_and_resumes(upstream, start_server, pkce, walk):
    config = f'[federation.upstream]\nissuer = "{upstream}"\nclient_id = "patchbay-test"\nclient_secret = "upstream-secret"\n'
    server = start_server("federating", config=config)
    redirect = "http://localhost:8767/cb"
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.post(f"{server.url}/api/v1/oidc/register", json={"client_name": "Fed app", "redirect_uris": [redirect]}) as response:
            client = await response.json()
        subjects = []
        for hint in ("idp", "kc_idp_hint"):
            http.cookie_jar.clear()
            verifier, challenge = pkce.pair()
            query = {
                "client_id": client["client_id"],
                "redirect_uri": redirect,
                "response_type": "code",
                "scope": "openid email profile",
                "state": f"fed-{hint}",
                "nonce": "rp-nonce",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                hint: "upstream",
            }
            async with http.get(f"{server.url}/api/v1/oidc/authorize?{urlencode(query)}", allow_redirects=False) as response:
                assert response.status == 302
                upstream_url = response.headers["Location"]
            assert upstream_url.startswith(upstream)
            upstream_query = parse_qs(urlsplit(upstream_url).query)
            assert upstream_query["code_challenge_method"] == ["S256"] and upstream_query["nonce"][0] != "rp-nonce"
            assert upstream_query["state"][0] != query["state"]  # its own state
            callback = await walk(http, upstream_url, redirect)
            answer = {k: v[0] for k, v in parse_qs(urlsplit(callback).query).items()}
            assert answer["state"] == query["state"] and answer["iss"] == server.url
            async with http.post(
                f"{server.url}/api/v1/oidc/token",
                data={
                    "grant_type": "authorization_code",
                    "code": answer["code"],
                    "redirect_uri": redirect,
                    "client_id": client["client_id"],
                    "client_secret": client["client_secret"],
                    "code_verifier": verifier,
                },
            ) as response:
                tokens = await response.json()
            async with http.get(f"{server.url}/api/v1/oidc/userinfo", headers={"Authorization": f"Bearer {tokens['access_token']}"}) as response:
                info = await response.json()
            assert info["email"] == "federated@example.com" and info["name"] == "Fede Rated"
            subjects.append(info["sub"])
        assert subjects[0] == subjects[1]  # linked the second time, not created again
        http.cookie_jar.clear()
        unknown = {
            "client_id": client["client_id"],
            "redirect_uri": redirect,
            "response_type": "code",
            "scope": "openid",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "idp": "nobody",
        }
        async with http.get(f"{server.url}/api/v1/oidc/authorize?{urlencode(unknown)}", allow_redirects=False) as response:
            assert response.headers["Location"].startswith("/api/v1/oidc/login")  # unknown hints are ignored
        forged = await http.get(f"{server.url}/api/v1/oidc/federation/callback?code=x&state=forged", allow_redirects=False)
        assert forged.status == 400
        assert (await forged.json()) == {"error": "invalid_request", "error_description": "federated login state is missing or does not match"}
