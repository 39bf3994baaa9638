"""Attack (issue 11, point 10): an OAuth login started in one workspace and handed to a victim must
not connect the victim's provider account into that workspace. The login is bound to the browser
that started it (core/connections/oauth.py, routes_oauth.py); the legitimate ``response=json`` flow goes
through the begin page in the user's own browser."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import aiohttp
from sqlalchemy import func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.models import Connection
from patchbay.core.testing import sign_access_token

ORIGIN = "http://127.0.0.1:8080"  # the test settings' public base URL


async def _json_login(api, ws) -> str:
    response = await api.get("/auth/fakeoauth/login", params={"response": "json"}, headers=ws["headers"])
    assert response.status == 200
    return (await response.json())["authorizationUrl"]


async def _provider_authorizes(url: str) -> tuple[str, dict[str, str]]:
    """The provider's authorization page (auto-approved): the callback path and its query."""
    async with aiohttp.ClientSession() as session, session.get(url, allow_redirects=False) as response:
        assert response.status == 302, await response.text()
        location = response.headers["Location"]
    return urlsplit(location).path, {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


async def _connections(api) -> int:
    async with api.server.app[SERVICES].db.session() as session:
        return await session.scalar(select(func.count()).select_from(Connection))


async def test_forwarded_login_does_not_connect_the_victim(api, ws, fake):
    begin = await _json_login(api, ws)
    assert urlsplit(begin).path == "/auth/fakeoauth/begin"  # not the provider's URL
    # The attacker confirms in their own client to obtain the provider URL, then sends it to the victim.
    attacker_jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=attacker_jar) as attacker:
        confirmed = await attacker.post(
            api.make_url("/auth/fakeoauth/begin"),
            data={"state": parse_qs(urlsplit(begin).query)["state"][0]},
            headers={"Origin": ORIGIN},
            allow_redirects=False,
        )
        assert confirmed.status == 302
        provider_url = confirmed.headers["Location"]
    path, query = await _provider_authorizes(provider_url)  # the victim signs in at the provider
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as victim:
        refused = await victim.get(api.make_url(path), params=query, allow_redirects=False)
        assert refused.status == 403 and "not started in this browser" in await refused.text()
    assert await _connections(api) == 0


async def test_forwarded_begin_link_asks_before_connecting(api, ws, fake):
    begin = await _json_login(api, ws)
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as victim:
        page = await victim.get(api.make_url(urlsplit(begin).path), params=parse_qs(urlsplit(begin).query), allow_redirects=False)
        assert page.status == 200 and "Acme" in await page.text() and "Continue" in await page.text()
        assert not victim.cookie_jar.filter_cookies(api.make_url("/auth/fakeoauth/callback"))
        state = parse_qs(urlsplit(begin).query)["state"][0]
        cross_site = await victim.post(
            api.make_url("/auth/fakeoauth/begin"), data={"state": state}, headers={"Origin": "https://evil.example"}, allow_redirects=False
        )
        assert cross_site.status == 403 and "Location" not in cross_site.headers
    assert await _connections(api) == 0


async def test_json_login_completes_in_the_users_own_browser(api, ws, fake):
    begin = await _json_login(api, ws)
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
        state = parse_qs(urlsplit(begin).query)["state"][0]
        confirmed = await browser.post(api.make_url("/auth/fakeoauth/begin"), data={"state": state}, headers={"Origin": ORIGIN}, allow_redirects=False)
        assert confirmed.status == 302
        path, query = await _provider_authorizes(confirmed.headers["Location"])
        done = await browser.get(api.make_url(path), params=query, allow_redirects=False)
        assert done.status == 200 and "is connected" in await done.text()
    assert await _connections(api) == 1


async def test_link_login_by_token_goes_through_the_begin_page(api, ws):
    token = await sign_access_token(api.server.app, {"sub": "u-1", "organization_id": ws["workspace_id"], "permissions": ["connections.write"]})
    response = await api.get("/auth/fakeoauth/login", params={"token": token}, allow_redirects=False)
    assert response.status == 302 and urlsplit(response.headers["Location"]).path == "/auth/fakeoauth/begin"
