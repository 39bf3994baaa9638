"""The OAuth connection routes' and the BYOA routes' real answers (redirects, the begin page, the
result page, JSON) are what /openapi.json declares for them, on SQLite and PostgreSQL."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import aiohttp

from patchbay.core.testing import create_workspace_with_key

_spec = importlib.util.spec_from_file_location("patchbay_tests_openapi_answers", Path(__file__).parents[1] / "core" / "openapi_answers.py")
answers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(answers)

ORIGIN = "http://127.0.0.1:8080"  # the test settings' public base URL
RETURN_TO = "https://app.example.com/connected"


async def _provider_callback(url: str) -> tuple[str, dict[str, str]]:
    """The fake provider's authorization page (auto-approved): the callback path and its query."""
    async with aiohttp.ClientSession() as session, session.get(url, allow_redirects=False) as response:
        location = response.headers["Location"]
    return urlsplit(location).path, {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


async def test_oauth_connect_answers_as_the_document_says(aiohttp_client, fake_app, fake, database_url):
    api = await aiohttp_client(fake_app(database_url=database_url))
    ws = await create_workspace_with_key(api.server.app, plan="enterprise")
    document = await (await api.get("/openapi.json")).json()
    login = "/auth/{providerType}/login"

    redirected = await api.get("/auth/fakeoauth/login", params={"redirect_uri": RETURN_TO}, headers=ws["headers"], allow_redirects=False)
    assert redirected.status == 302
    await answers.assert_documented(document, "GET", login, redirected)
    path, query = await _provider_callback(redirected.headers["Location"])
    back = await api.get(path, params=query, allow_redirects=False)
    assert back.status == 302
    await answers.assert_documented(document, "GET", "/auth/{providerType}/callback", back)

    as_json = await api.get("/auth/fakeoauth/login", params={"response": "json"}, headers=ws["headers"])
    assert as_json.status == 200
    await answers.assert_documented(document, "GET", login, as_json)
    begin = (await as_json.json())["authorizationUrl"]
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
        page = await browser.get(api.make_url(urlsplit(begin).path), params=parse_qs(urlsplit(begin).query), allow_redirects=False)
        assert page.status == 200
        await answers.assert_documented(document, "GET", "/auth/{providerType}/begin", page)
        state = parse_qs(urlsplit(begin).query)["state"][0]
        confirmed = await browser.post(api.make_url("/auth/fakeoauth/begin"), data={"state": state}, headers={"Origin": ORIGIN}, allow_redirects=False)
        assert confirmed.status == 302
        await answers.assert_documented(document, "POST", "/auth/{providerType}/begin", confirmed)
        path, query = await _provider_callback(confirmed.headers["Location"])
        done = await browser.get(api.make_url(path), params=query, allow_redirects=False)
        assert done.status == 200
        await answers.assert_documented(document, "GET", "/auth/{providerType}/callback", done)

    refreshed = await api.post(f"/auth/fakeoauth/refresh/{ws['workspace_id']}", headers=ws["headers"])
    assert refreshed.status == 201, await refreshed.text()
    await answers.assert_documented(document, "POST", "/auth/{providerType}/refresh/{accountId}", refreshed)
    info = await api.get("/auth/fakeoauth/deauthorize")
    await answers.assert_documented(document, "GET", "/auth/{providerType}/deauthorize", info)
    deauthorized = await api.post("/auth/fakeoauth/deauthorize", headers=ws["headers"])
    assert deauthorized.status == 201 and (await deauthorized.json())["disconnected"] == 2
    await answers.assert_documented(document, "POST", "/auth/{providerType}/deauthorize", deauthorized)


async def test_byoa_credentials_answer_as_the_document_says(aiohttp_client, fake_app, database_url):
    api = await aiohttp_client(fake_app(database_url=database_url))
    ws = await create_workspace_with_key(api.server.app)
    document = await (await api.get("/openapi.json")).json()
    path = "/byoa/{providerType}/credentials"
    none = await api.get("/byoa/fakeoauth/credentials", headers=ws["headers"])
    assert await none.json() == {"provider": "fakeoauth", "configured": False}  # the keys of a configured app are absent, not null
    await answers.assert_documented(document, "GET", path, none)
    saved = await api.post("/byoa/fakeoauth/credentials", json={"clientId": "mine", "clientSecret": "s3cret", "scopes": "read"}, headers=ws["headers"])
    assert saved.status == 201
    await answers.assert_documented(document, "POST", path, saved)
    await answers.assert_documented(document, "GET", path, await api.get("/byoa/fakeoauth/credentials", headers=ws["headers"]))
    await answers.assert_documented(document, "DELETE", path, await api.delete("/byoa/fakeoauth/credentials", headers=ws["headers"]))
