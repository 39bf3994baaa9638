"""The hosted page's step forms, as /openapi.json declares them, are what the steps read (issue 17):
the credential step built from the declared ``csrf``, ``apiKey`` and a ``param:<name>`` field
connects, and the OAuth step built from its declared ``csrf`` goes to the provider, on SQLite and
PostgreSQL."""

from __future__ import annotations

from aiohttp import ClientSession, CookieJar

from tests.connect_ui.fake_keys import API_KEY
from tests.core.openapi_forms import Documented

STEP = "/connect/ui/providers/{name}"


def csrf_of(page: str) -> str:
    return page.split('name="csrf" value="', 1)[1].split('"', 1)[0]


async def test_the_credential_step_takes_its_declared_form(connect_api, ws, keys):
    docs = Documented(await (await connect_api.get("/openapi.json")).json())
    session = await (
        await connect_api.post("/connect/v1/connect-sessions", json={"endUser": {"id": "u-1"}, "allowedProviders": ["acmekeys"]}, headers=ws["headers"])
    ).json()
    await connect_api.get("/connect/ui", params={"session": session["token"]})
    csrf = csrf_of(await (await connect_api.get("/connect/ui/providers/acmekeys")).text())
    form = docs.form("POST", STEP, csrf=csrf, apiKey=API_KEY, **{"param:subdomain": "ada-co"})
    done = await connect_api.post("/connect/ui/providers/acmekeys", data=form, allow_redirects=False)
    assert done.status == 303 and done.headers["Location"] == "/connect/ui/done", await done.text()
    assert keys.calls == [("ada-co", f"Bearer {API_KEY}")]


async def test_the_oauth_step_takes_its_declared_form(serve_connect, with_oauth, database_url, oauth_fake):
    server = await serve_connect(database_url=database_url, **with_oauth())
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:
        docs = Documented(await (await browser.get(f"{server.base}/openapi.json")).json())
        body = {"endUser": {"id": "u-1"}, "allowedProviders": ["fakeoauth"]}
        async with browser.post(f"{server.base}/connect/v1/connect-sessions", json=body, headers=server.workspace["headers"]) as created:
            session = await created.json()
        await browser.get(f"{server.base}/connect/ui", params={"session": session["token"]})
        csrf = csrf_of(await (await browser.get(f"{server.base}/connect/ui/providers/fakeoauth")).text())
        started = await browser.post(
            f"{server.base}/connect/ui/providers/fakeoauth/oauth", data=docs.form("POST", STEP + "/oauth", csrf=csrf), allow_redirects=False
        )
        assert started.status == 302 and started.headers["Location"].startswith(oauth_fake.base), await started.text()
