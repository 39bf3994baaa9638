"""A real browser (Debian's headless Chromium, driven by playwright-core) logs a user in through the
login and consent pages, with JavaScript off; screenshots are kept in tests/artifacts/."""

import json
import shutil
import urllib.parse
import urllib.request

import pytest


def post(url: str, data: dict, *, as_json: bool = False) -> dict:
    body = json.dumps(data).encode() if as_json else urllib.parse.urlencode(data).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json" if as_json else "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return path


def test_browser_logs_in_through_the_real_pages(node, live_server, pkce):
    executable = chromium()
    artifacts = pkce.artifacts
    redirect = "http://localhost:8766/cb"
    client = post(
        f"{live_server.url}/api/v1/oidc/register", {"client_name": "Browser Shop", "redirect_uris": [redirect], "scope": "openid profile email"}, as_json=True
    )
    verifier, challenge = pkce.pair()
    query = urllib.parse.urlencode(
        {
            "client_id": client["client_id"],
            "redirect_uri": redirect,
            "response_type": "code",
            "scope": "openid email",
            "state": "browser-state",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )
    result = node(
        "browser_login.mjs",
        {
            "AUTH_URL": f"{live_server.url}/api/v1/oidc/authorize?{query}",
            "REDIRECT": redirect,
            "EMAIL": "live@example.com",
            "PASSWORD": "correct horse battery",
            "ARTIFACTS": str(artifacts),
            "CHROMIUM": executable,
        },
    )
    assert result["loginHeading"] == "Sign in" and result["emailLabel"] == 1
    assert "not correct" in result["errorText"]
    assert "Browser Shop" in result["consentHeading"] and any("email" in s for s in result["scopes"])
    assert result["state"] == "browser-state" and result["iss"] == live_server.url
    assert result["sessionCookie"] == {"httpOnly": True, "sameSite": "Lax"}
    for name in ("identity-login.png", "identity-login-error.png", "identity-consent.png", "identity-callback.png"):
        assert (artifacts / name).stat().st_size > 1000, name
    tokens = post(
        f"{live_server.url}/api/v1/oidc/token",
        {
            "grant_type": "authorization_code",
            "code": result["code"],
            "redirect_uri": redirect,
            "client_id": client["client_id"],
            "client_secret": client["client_secret"],
            "code_verifier": verifier,
        },
    )
    assert tokens["id_token"] and tokens["token_type"] == "Bearer"
