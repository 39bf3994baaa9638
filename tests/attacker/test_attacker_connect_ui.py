"""Attacks on the hosted connect page, sent over HTTP as an outsider would: a cross-site form post
without the page's CSRF value, a forged page cookie, a provider the session does not offer, a
framing attempt, and the token showing up in a log."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import pytest
from sqlalchemy import func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.models import Connection
from patchbay.core.testing import create_workspace_with_key

_spec = importlib.util.spec_from_file_location("patchbay_tests_fake_keys_attacker", Path(__file__).parents[1] / "connect_ui" / "fake_keys.py")
fake_keys = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_keys)


@pytest.fixture
async def keys():
    server = fake_keys.FakeKeys()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def page(aiohttp_client, make_app, keys):
    """A client holding the page cookie of a fresh session offering ``acmekeys`` only."""
    client = await aiohttp_client(make_app(plugins=[fake_keys.FakeKeysPack(keys.base)]))
    ws = await create_workspace_with_key(client.server.app, plan="enterprise")
    created = await client.post("/connect/v1/connect-sessions", json={"endUser": {"id": "victim"}, "allowedProviders": ["acmekeys"]}, headers=ws["headers"])
    client.session_token = (await created.json())["token"]
    assert (await client.get(f"/connect/ui?session={client.session_token}", allow_redirects=False)).status == 303
    return client


async def connections(client) -> int:
    async with client.server.app[SERVICES].db.session() as session:
        return int(await session.scalar(select(func.count()).select_from(Connection)))


async def test_cross_site_post_without_csrf_value_connects_nothing(page, keys):
    form = {"apiKey": fake_keys.API_KEY, "param:subdomain": "attacker"}
    for csrf in (None, "", "forged-value"):
        response = await page.post("/connect/ui/providers/acmekeys", data={**form, **({"csrf": csrf} if csrf is not None else {})}, allow_redirects=False)
        assert response.status == 403 and "Form expired" in await response.text()
    assert await connections(page) == 0 and keys.calls == []


async def test_forged_cookie_opens_nothing(page):
    page.session.cookie_jar.clear()
    for value in ("someid", "someid.bad-mac"):
        response = await page.get("/connect/ui/providers/acmekeys", cookies={"pb_connect": value})
        assert response.status == 400 and "not valid" in await response.text()


async def test_provider_not_offered_by_the_session_is_refused(page, keys):
    form = await (await page.get("/connect/ui/providers/acmekeys")).text()
    csrf = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    assert (await page.get("/connect/ui/providers/notesapp")).status == 404
    response = await page.post("/connect/ui/providers/notesapp", data={"csrf": csrf, "apiKey": fake_keys.API_KEY})
    assert response.status == 404 and await connections(page) == 0


async def test_pages_refuse_framing_and_token_is_never_logged(page, caplog):
    caplog.set_level(logging.DEBUG)
    response = await page.get("/connect/ui/providers/acmekeys")
    assert response.headers["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["Referrer-Policy"] == "no-referrer" and response.headers["Cache-Control"] == "no-store"
    assert page.session_token not in caplog.text


async def test_racing_submits_make_one_connection(page, keys):
    import asyncio

    form = await (await page.get("/connect/ui/providers/acmekeys")).text()
    csrf = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    data = {"csrf": csrf, "apiKey": fake_keys.API_KEY, "param:subdomain": "ada-co"}
    answers = await asyncio.gather(*(page.post("/connect/ui/providers/acmekeys", data=data, allow_redirects=False) for _ in range(4)))
    assert sorted(a.status for a in answers)[0] == 303 and all(a.status in (303, 400) for a in answers)
    assert await connections(page) == 1, "one session token makes one connection"


async def test_static_route_serves_only_its_scripts(page):
    helper = await page.get("/connect/ui/static/patchbay-connect.js")
    assert helper.status == 200 and "PatchbayConnect" in await helper.text() and helper.headers["Content-Type"].startswith("text/javascript")
    for path in ("/connect/ui/static/..%2Fservice.py", "/connect/ui/static/../models.py", "/connect/ui/static/nope.js"):
        assert (await page.get(path)).status == 404, path


# -- the done page tells only the customer's origin -----------------------------------------------


async def _done_page(client, ws, **session) -> str:
    """The done page's HTML after connecting through a session created with ``session``."""
    created = await client.post(
        "/connect/v1/connect-sessions", json={"endUser": {"id": "victim"}, "allowedProviders": ["acmekeys"], **session}, headers=ws["headers"]
    )
    assert created.status == 201, await created.text()
    assert (await client.get(f"/connect/ui?session={(await created.json())['token']}", allow_redirects=False)).status == 303
    form = await (await client.get("/connect/ui/providers/acmekeys")).text()
    csrf = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    connected = await client.post(
        "/connect/ui/providers/acmekeys", data={"csrf": csrf, "apiKey": fake_keys.API_KEY, "param:subdomain": "ada-co"}, allow_redirects=False
    )
    assert connected.status == 303 and connected.headers["Location"].endswith("/connect/ui/done")
    done = await client.get("/connect/ui/done")
    assert done.status == 200
    return await done.text()


def _origin(html: str) -> str:
    return html.split('data-origin="', 1)[1].split('"', 1)[0]


async def test_the_done_page_posts_its_result_only_to_the_return_urls_origin(aiohttp_client, make_app, keys):
    """Any page that opened the connect page (an attacker's, with a leaked session link) must not
    receive the connection id: without a return URL the page posts nothing; with one, it posts only
    to that URL's origin."""
    client = await aiohttp_client(make_app(plugins=[fake_keys.FakeKeysPack(keys.base)]))
    ws = await create_workspace_with_key(client.server.app, plan="enterprise")

    without = await _done_page(client, ws)
    with_return = await _done_page(client, ws, returnUrl="https://user:pw@App.Example.com:8443/integrations/done?x=1")

    assert _origin(without) == "" and "*" not in _origin(without)
    assert _origin(with_return) == "https://app.example.com:8443"
    script = await (await client.get("/connect/ui/static/connect-page.js")).text()
    posts = [line.strip() for line in script.splitlines() if "postMessage(" in line]
    assert posts == ["opener.postMessage(Object.assign({ type: 'patchbay:connect' }, data), result.dataset.origin);"]
    assert "} else if (opener && result.dataset.origin) {" in script  # no origin: no message
