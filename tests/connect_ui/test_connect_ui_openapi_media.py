"""The hosted connect page's real answers (the redirect that trades the token, the pages, the OAuth
step's redirects, the refusals) are what /openapi.json declares for them, on SQLite and PostgreSQL."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from aiohttp import ClientSession, CookieJar

from patchbay.core.connect_ui.pages import PREFIX

_spec = importlib.util.spec_from_file_location("patchbay_tests_openapi_answers", Path(__file__).parents[1] / "core" / "openapi_answers.py")
answers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(answers)

API_KEY = "acme-secret-key-1"


async def test_the_hosted_page_answers_as_the_document_says(serve_connect, with_oauth, database_url, oauth_fake):
    server = await serve_connect(database_url=database_url, **with_oauth())
    base = server.base
    async with ClientSession(headers=server.workspace["headers"]) as api:
        document = await (await api.get(f"{base}/openapi.json")).json()
        created = await api.post(f"{base}/connect/v1/connect-sessions", json={"endUser": {"id": "user-9"}, "allowedProviders": ["fakeoauth", "acmekeys"]})
        token = (await created.json())["token"]

    async def check(method: str, path: str, response) -> None:
        await answers.assert_documented(document, method, path, response)

    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:
        entered = await browser.get(f"{base}{PREFIX}?session={token}", allow_redirects=False)
        assert entered.status == 303
        await check("GET", PREFIX, entered)
        await check("GET", PREFIX + "/providers", await browser.get(f"{base}{PREFIX}/providers"))
        step = await browser.get(f"{base}{PREFIX}/providers/fakeoauth")
        await check("GET", PREFIX + "/providers/{name}", step)
        csrf = (await step.text()).split('name="csrf" value="', 1)[1].split('"', 1)[0]

        refused = await browser.post(f"{base}{PREFIX}/providers/acmekeys", data={"csrf": "forged"}, allow_redirects=False)
        assert refused.status == 403
        await check("POST", PREFIX + "/providers/{name}", refused)
        missing = await browser.post(f"{base}{PREFIX}/providers/acmekeys", data={"csrf": csrf}, allow_redirects=False)
        assert missing.status == 400
        await check("POST", PREFIX + "/providers/{name}", missing)

        to_provider = await browser.post(f"{base}{PREFIX}/providers/fakeoauth/oauth", data={"csrf": csrf}, allow_redirects=False)
        assert to_provider.status == 302
        await check("POST", PREFIX + "/providers/{name}/oauth", to_provider)
        to_callback = await browser.get(to_provider.headers["Location"], allow_redirects=False)
        to_return = await browser.get(to_callback.headers["Location"], allow_redirects=False)
        assert to_return.status == 302
        await check("GET", "/auth/{providerType}/callback", to_return)
        to_done = await browser.get(to_return.headers["Location"], allow_redirects=False)
        assert to_done.status == 303
        await check("GET", PREFIX + "/oauth/return", to_done)
        done = await browser.get(f"{base}{PREFIX}/done")
        assert done.status == 200
        await check("GET", PREFIX + "/done", done)
        used = await browser.get(f"{base}{PREFIX}?session={token}", allow_redirects=False)
        assert used.status == 400
        await check("GET", PREFIX, used)

    async with ClientSession(headers=server.workspace["headers"]) as api:
        created = await api.post(f"{base}/connect/v1/connect-sessions", json={"endUser": {"id": "user-10"}, "allowedProviders": ["acmekeys"]})
        token = (await created.json())["token"]
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:
        await browser.get(f"{base}{PREFIX}?session={token}")
        page = await (await browser.get(f"{base}{PREFIX}/providers/acmekeys")).text()
        csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        connected = await browser.post(
            f"{base}{PREFIX}/providers/acmekeys", data={"csrf": csrf, "apiKey": API_KEY, "param:subdomain": "ada-co"}, allow_redirects=False
        )
        assert connected.status == 303, await connected.text()
        await check("POST", PREFIX + "/providers/{name}", connected)
