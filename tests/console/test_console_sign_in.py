"""Signing in to the console through patchbay's own identity provider, over HTTP."""

from __future__ import annotations

from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.console.models import ConsoleSession
from patchbay.core.console.service import CLIENT_ID
from patchbay.core.identity.models import OidcClient


async def test_the_console_is_a_first_party_client_made_at_start(console_server):
    async with console_server.app[SERVICES].db.session() as db:
        client = await db.get(OidcClient, CLIENT_ID)
    assert client.trust == "first_party" and not client.self_registered
    assert client.redirect_uris == [f"{console_server.base}/console/auth/callback"]
    assert client.grant_types == ["authorization_code"] and client.require_pkce
    assert client.token_endpoint_auth_method == "client_secret_post" and client.secret_digest


async def test_a_person_signs_in_through_the_identity_provider(make_person, sign_in, console_server):
    person = await make_person("viewer")
    http = await sign_in(person)
    assert http.landed.endswith(f"/console/w/{person.workspace_id}/")
    async with http.get(http.landed) as response:
        page = await response.text()
    assert response.status == 200 and "Viewer 1" in page
    cookie = next(c for c in http.cookie_jar if c.key == "pb_console")
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and cookie["path"] == "/console"
    async with console_server.app[SERVICES].db.session() as db:
        rows = list(await db.scalars(select(ConsoleSession)))
    assert len(rows) == 1 and rows[0].user_id == person.user_id and rows[0].token_digest != cookie.value


async def test_without_a_session_a_page_goes_to_the_sign_in(make_person, console_server):
    from aiohttp import ClientSession

    person = await make_person("viewer")
    async with ClientSession() as http, http.get(f"{console_server.base}/console/w/{person.workspace_id}/", allow_redirects=False) as response:
        assert response.status == 303
        assert response.headers["Location"] == f"/console/auth/login?next=/console/w/{person.workspace_id}/"


async def test_the_sign_in_asks_for_a_code_with_pkce_s256_and_a_nonce(console_server):
    from urllib.parse import parse_qs, urlsplit

    from aiohttp import ClientSession

    async with ClientSession() as http, http.get(f"{console_server.base}/console/auth/login?next=/console/w/x/", allow_redirects=False) as response:
        assert response.status == 302
        target = urlsplit(response.headers["Location"])
        login_cookie = response.cookies["pb_console_login"]
    query = {key: values[0] for key, values in parse_qs(target.query).items()}
    assert f"{target.scheme}://{target.netloc}{target.path}" == f"{console_server.base}/api/v1/oidc/authorize"
    assert query["client_id"] == CLIENT_ID and query["response_type"] == "code" and query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43 and query["state"] and query["nonce"]
    assert query["redirect_uri"] == f"{console_server.base}/console/auth/callback"
    assert login_cookie["httponly"] and login_cookie["path"] == "/console/auth" and query["state"] not in login_cookie.value, "encrypted"


async def test_a_callback_that_did_not_start_here_is_refused(console_server):
    from aiohttp import ClientSession, CookieJar

    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as http:
        async with http.get(f"{console_server.base}/console/auth/callback?code=stolen&state=guessed", allow_redirects=False) as response:
            page = await response.text()
        assert response.status == 400 and "did not start here" in page
        async with http.get(f"{console_server.base}/console/auth/login", allow_redirects=False) as response:
            state = response.headers["Location"].split("state=", 1)[1].split("&", 1)[0]
        async with http.get(f"{console_server.base}/console/auth/callback?code=made-up&state={state}", allow_redirects=False) as response:
            page = await response.text()
        assert response.status == 400 and "refused the sign-in" in page
        assert not any(cookie.key == "pb_console" for cookie in http.cookie_jar)


def test_only_a_console_path_is_a_place_to_return_to():
    from patchbay.core.console.routes_auth import _safe_next

    assert _safe_next("/console/w/abc/settings/keys") == "/console/w/abc/settings/keys"
    for bad in ("https://evil.example/", "//evil.example/console/", "/console\\@evil", "/api/v1/oidc/token", None, ""):
        assert _safe_next(bad) == "/console/", bad
