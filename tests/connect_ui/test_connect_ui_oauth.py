"""The OAuth step of the hosted page against a local fake OAuth server, over real HTTP without
JavaScript (the whole-page redirect a phone gets): the connection comes back to the page, carries
the end user and the session; a forged return naming another connection claims nothing; an OAuth
app that is not configured and a provider's refusal are said on the page."""

from __future__ import annotations

from aiohttp import ClientSession, CookieJar
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.connect_ui.models import ConnectSession
from patchbay.core.connections.models import Connection


async def serve(serve_connect, with_oauth, database_url, configured=True):
    return await serve_connect(database_url=database_url, **with_oauth(configured))


async def new_session(server, **body):
    body = {"endUser": {"id": "user-9"}, "allowedProviders": ["fakeoauth"], **body}
    async with ClientSession(headers=server.workspace["headers"]) as api, api.post(f"{server.base}/connect/v1/connect-sessions", json=body) as response:
        assert response.status == 201, await response.text()
        return await response.json()


async def start_oauth(browser, server, token, **form):
    await browser.get(f"{server.base}/connect/ui?session={token}")
    page = await (await browser.get(f"{server.base}/connect/ui/providers/fakeoauth")).text()
    assert "Continue with Fake OAuth" in page
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    return await browser.post(f"{server.base}/connect/ui/providers/fakeoauth/oauth", data={"csrf": csrf, **form})


async def test_oauth_connect_comes_back_to_the_page(serve_connect, with_oauth, database_url, oauth_fake):
    server = await serve(serve_connect, with_oauth, database_url)
    session = await new_session(server, metadata={"team": "blue"})
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:
        done = await start_oauth(browser, server, session["token"])
        assert done.status == 200 and str(done.url).endswith("/connect/ui/done"), str(done.url)
        assert "<h1>Connected</h1>" in await done.text()
    async with server.app[SERVICES].db.session() as db:
        (connection,) = list(await db.scalars(select(Connection)))
        row = await db.get(ConnectSession, session["id"])
    assert connection.provider == "fakeoauth" and connection.end_user_id == "user-9"
    assert connection.meta["connectSessionId"] == session["id"] and connection.meta["team"] == "blue"
    assert row.connection_id == connection.id and row.used_at is not None

    # reconnect: new consent, same connection
    again = await new_session(server, reconnectConnectionId=connection.id)
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:
        done = await start_oauth(browser, server, again["token"])
        assert "<h1>Reconnected</h1>" in await done.text()
    async with server.app[SERVICES].db.session() as db:
        rows = list(await db.scalars(select(Connection)))
    assert [r.id for r in rows] == [connection.id] and rows[0].meta["connectSessionId"] == again["id"]


async def test_forged_return_claims_no_other_connection(serve_connect, with_oauth, database_url, oauth_fake):
    server = await serve(serve_connect, with_oauth, database_url)
    victim = await new_session(server, endUser={"id": "victim"})
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:
        await start_oauth(browser, server, victim["token"])
    async with server.app[SERVICES].db.session() as db:
        (connection,) = list(await db.scalars(select(Connection)))
    attacker = await new_session(server, endUser={"id": "attacker"})
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:
        await browser.get(f"{server.base}/connect/ui?session={attacker['token']}")
        forged = await browser.get(
            f"{server.base}/connect/ui/oauth/return", params={"provider": "fakeoauth", "status": "connected", "connectionId": connection.id}
        )
        assert forged.status == 400 and "did not complete" in await forged.text()
    async with server.app[SERVICES].db.session() as db:
        assert (await db.get(Connection, connection.id)).end_user_id == "victim"
        assert (await db.get(ConnectSession, attacker["id"])).used_at is None


async def test_unconfigured_oauth_app_and_refused_consent_are_shown(serve_connect, with_oauth, database_url, oauth_fake):
    server = await serve(serve_connect, with_oauth, database_url, configured=False)
    session = await new_session(server)
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:
        refused = await start_oauth(browser, server, session["token"])
        assert refused.status == 400 and "No OAuth app is configured for Fake OAuth" in await refused.text()
        back = await browser.get(
            f"{server.base}/connect/ui/oauth/return",
            params={"provider": "fakeoauth", "status": "error", "error": "access_denied", "error_description": "Fake OAuth: The user said no"},
        )
        assert back.status == 400 and "The user said no" in await back.text() and 'role="alert"' in await back.text()
    async with server.app[SERVICES].db.session() as db:
        assert list(await db.scalars(select(Connection))) == []
        assert (await db.get(ConnectSession, session["id"])).used_at is None, "the end user may try again"
