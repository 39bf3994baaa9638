"""A real browser (Debian's headless Chromium, driven by playwright-core) walks an end user through
the hosted connect page: an API-key provider with a connection parameter (search, categories,
keyboard, validation, the provider's refusal, success), an OAuth provider against the local fake
OAuth server (popup, and whole-page redirect on a phone), an approval-gated connect, an expired
session, a reconnect that returns to the customer's URL, and the JavaScript helper on the
customer's own page. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from aiohttp import ClientSession, CookieJar, web
from sqlalchemy import select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.connect_ui.models import ConnectSession
from patchbay.core.connections.models import Connection
from patchbay.core.timeutil import utcnow
from tests.node_peers import installed

API_KEY = "acme-secret-key-1"
TESTS = Path(__file__).parents[1]
NODE_PEERS = TESTS / "identity" / "node"
ARTIFACTS = TESTS / "artifacts"
SCRIPT = Path(__file__).with_name("node") / "connect_page.mjs"


@pytest.fixture(scope="session")
def browser_tools() -> dict[str, str]:
    """Chromium and playwright-core (the identity tests' Node peers, installed on first use)."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.skip("Chromium, Node.js and npm are needed for the connect page's browser tests")
    installed(NODE_PEERS, "Chromium, Node.js and npm are needed for the connect page's browser tests")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return {"CHROMIUM": executable, "NODE_PEERS": str(NODE_PEERS), "ARTIFACTS": str(ARTIFACTS)}


@pytest.fixture
async def live(serve_connect):
    return await serve_connect()


async def walk(tools: dict[str, str], scenario: str, url: str, **env: str) -> dict:
    process = await asyncio.create_subprocess_exec(
        "node",
        str(SCRIPT),
        env={**os.environ, **tools, "SCENARIO": scenario, "URL": url, "API_KEY": API_KEY, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=240)
    assert process.returncode == 0, f"{scenario} failed:\n{stdout.decode()[-3000:]}\n{stderr.decode()[-3000:]}"
    return json.loads(stdout.decode().strip().splitlines()[-1])


async def new_session(live, **body) -> dict:
    body.setdefault("endUser", {"id": "user-42", "displayName": "Ada"})
    async with ClientSession() as http, http.post(str(live.make_url("/connect/v1/connect-sessions")), json=body, headers=live.workspace["headers"]) as response:
        assert response.status == 201, await response.text()
        return await response.json()


def assert_shots(*names: str) -> None:
    for name in names:
        assert (ARTIFACTS / f"connect-ui-{name}.png").stat().st_size > 1000, name


async def test_end_user_connects_an_api_key_provider_with_a_subdomain(browser_tools, live, keys):
    session = await new_session(live, allowedProviders=["notesapp", "acmekeys"])
    seen = await walk(browser_tools, "api_key", session["url"])
    assert seen["status"] == 200 and seen["url"].endswith("/connect/ui/providers"), "the token leaves the address bar"
    assert seen["heading"] == "Choose an app to connect"
    assert [p.split("\n")[1] for p in seen["providers"]] == ["Acme Keys", "Notes App"]
    assert len(seen["filtered"]) == 1 and "Acme Keys" in seen["filtered"][0] and seen["noMatch"] is True
    assert len(seen["byCategory"]) == 1 and "Notes App" in seen["byCategory"][0]
    assert seen["stepHeading"].endswith("Connect Acme Keys") and seen["labels"] == ["API key", "Subdomain"]
    assert seen["cookieHttpOnly"] is True
    assert seen["validation"] == ["API key is required.", "Subdomain is required."] and seen["invalid"] == "true"
    assert seen["refused"] == "Credentials rejected by Acme Keys"
    assert seen["subdomainKept"] == "ada-co" and seen["keyKept"] == "", "the refused key is not sent back to the page"
    assert seen["doneHeading"] == "Connected" and "ready" in seen["doneText"]
    assert seen["headers"]["x-frame-options"] == "DENY" and "frame-ancestors 'none'" in seen["headers"]["content-security-policy"]
    assert_shots("providers", "api-key-form", "api-key-validation", "api-key-refused", "api-key-connected")
    async with live.app[SERVICES].db.session() as db:
        rows = list(await db.scalars(select(Connection)))
    assert len(rows) == 1 and rows[0].end_user_id == "user-42" and rows[0].params["subdomain"] == "ada-co"
    assert keys.calls[-1] == ("ada-co", f"Bearer {API_KEY}")


async def test_approval_gated_connect_shows_pending(browser_tools, live, keys):
    async with ClientSession() as http:
        async with http.patch(
            str(live.make_url("/connect/v1/approvals/policy")), json={"enabled": True, "categories": ["crm"]}, headers=live.workspace["headers"]
        ) as response:
            assert response.status == 200, await response.text()
    session = await new_session(live, allowedProviders=["acmekeys"])
    seen = await walk(browser_tools, "pending", session["url"])
    assert seen["doneHeading"] == "Waiting for approval" and "must approve" in seen["doneText"]
    assert_shots("pending-approval")
    async with live.app[SERVICES].db.session() as db:
        assert list(await db.scalars(select(Connection))) == [], "nothing is connected before the approval"
        row = await db.get(ConnectSession, session["id"])
    assert row.approval_id and row.used_at is not None


async def test_expired_session_says_so(browser_tools, live):
    session = await new_session(live)
    async with live.app[SERVICES].db.transaction() as db:
        await db.execute(update(ConnectSession).values(expires_at=utcnow() - timedelta(seconds=1)))
    seen = await walk(browser_tools, "expired", session["url"])
    assert seen["status"] == 400 and seen["heading"] == "Link expired" and "has expired" in seen["alert"]
    assert_shots("expired")


async def test_reconnect_renews_the_same_connection_and_returns(browser_tools, live, keys, through_page):
    first = await new_session(live, allowedProviders=["acmekeys"])
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as http:
        done = await through_page(http, str(live.make_url("")).rstrip("/"), first["token"], "acmekeys", {"apiKey": API_KEY, "param:subdomain": "ada-co"})
        assert done.status == 303
    async with live.app[SERVICES].db.session() as db:
        (connection,) = list(await db.scalars(select(Connection)))
    returning = "http://customer.test/connected"
    session = await new_session(live, reconnectConnectionId=connection.id, returnUrl=returning)
    assert session["allowedProviders"] == ["acmekeys"]
    seen = await walk(browser_tools, "reconnect", session["url"], RETURN_URL=returning)
    assert seen["heading"].endswith("Reconnect Acme Keys") and seen["labels"] == ["API key", "Subdomain"]
    assert seen["returned"].startswith(returning + "?") and "status=reconnected" in seen["returned"] and f"connectionId={connection.id}" in seen["returned"]
    assert_shots("reconnect-form", "reconnect-returned")
    async with live.app[SERVICES].db.session() as db:
        rows = list(await db.scalars(select(Connection)))
    assert [r.id for r in rows] == [connection.id], "a reconnect makes no second connection"
    assert rows[0].connected_at > connection.connected_at


@pytest.mark.parametrize("scenario", ["oauth", "oauth_mobile"])
async def test_end_user_connects_an_oauth_provider(browser_tools, serve_connect, with_oauth, oauth_fake, scenario):
    live = await serve_connect(**with_oauth())
    session = await new_session(live, allowedProviders=["fakeoauth"], endUser={"id": "user-oauth"})
    seen = await walk(browser_tools, scenario, session["url"])
    assert seen["heading"].endswith("Connect Fake OAuth") and seen["doneHeading"] == "Connected"
    if scenario == "oauth":
        assert seen["popupOpened"] is True and seen["popupClosed"] is True, "the popup hands back to the page and closes"
        assert_shots("oauth-step", "oauth-connected")
    else:
        assert seen["popups"] == 0, "a phone gets a whole-page redirect"
        assert_shots("oauth-mobile-connected")
    async with live.app[SERVICES].db.session() as db:
        (connection,) = list(await db.scalars(select(Connection)))
    assert connection.provider == "fakeoauth" and connection.end_user_id == "user-oauth"


CUSTOMER_PAGE = """<!doctype html><title>customer</title><script src="{helper}"></script>
<h1>Customer app</h1><button id="connect">Connect your CRM</button><pre id="out"></pre>
<script>document.getElementById('connect').onclick = function () {{
  PatchbayConnect.open({session}).then(function (r) {{ document.getElementById('out').textContent = JSON.stringify(r); }},
    function (e) {{ document.getElementById('out').textContent = 'error:' + e.message; }});
}};</script>"""


async def test_javascript_helper_resolves_with_the_connection_id(browser_tools, live, keys, aiohttp_server):
    customer = web.Application()
    page = {}

    async def customer_page(request: web.Request) -> web.Response:
        return web.Response(text=page["html"], content_type="text/html")

    customer.router.add_get("/app", customer_page)
    customer_server = await aiohttp_server(customer)
    # the page posts its result only to the origin of the session's return URL: the customer's
    session = await new_session(live, allowedProviders=["acmekeys"], endUser={"id": "user-helper"}, returnUrl=str(customer_server.make_url("/done")))
    page["html"] = CUSTOMER_PAGE.format(helper=f"{live.base}/connect/ui/static/patchbay-connect.js", session=json.dumps(session["url"]))
    seen = await walk(browser_tools, "helper", str(customer_server.make_url("/app")))
    result = json.loads(seen["result"])
    async with live.app[SERVICES].db.session() as db:
        (connection,) = list(await db.scalars(select(Connection)))
    assert result == {"status": "connected", "connectionId": connection.id, "approvalId": None, "endUserId": "user-helper"}
    assert seen["popupClosed"] is True
    assert_shots("helper-resolved")
