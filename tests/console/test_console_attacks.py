"""Attacks on the console over HTTP: another workspace's ids, forms without their CSRF token, a
viewer's writes, a cookie kept after sign-out, framing."""

from __future__ import annotations

import pytest
from aiohttp import ClientSession

from tests.console.conftest import csrf_of


async def test_another_workspaces_id_answers_404(make_person, sign_in):
    mine = await make_person("admin")
    theirs = await make_person("admin")
    http = await sign_in(mine)
    async with http.get(f"{http.base}/console/w/{theirs.workspace_id}/") as response:
        page = await response.text()
    assert response.status == 404 and "Not found" in page and theirs.workspace_id not in page.split("</header>")[0]
    async with http.get(f"{http.base}/console/w/no-such-workspace/") as response:
        assert response.status == 404


async def test_an_operator_opens_every_workspace(make_person, sign_in):
    other = await make_person("admin")
    operator = await make_person("", other.workspace_id, operator=True, email="op@example.com")
    http = await sign_in(operator)
    async with http.get(f"{http.base}/console/w/{other.workspace_id}/") as response:
        page = await response.text()
    assert response.status == 200 and "operator" in page


async def test_a_form_without_its_csrf_token_is_refused(make_person, sign_in):
    person = await make_person("admin")
    http = await sign_in(person)
    async with http.post(f"{http.base}/console/auth/logout", data={}, allow_redirects=False) as response:
        assert response.status == 403
    async with http.post(f"{http.base}/console/auth/logout", data={"csrf": "forged"}, allow_redirects=False) as response:
        assert response.status == 403
    async with http.get(http.landed) as response:
        assert response.status == 200, "the refused sign-out did nothing"
    keys = f"{http.base}/console/w/{person.workspace_id}/settings/keys"
    async with http.post(keys, data={"name": "forged"}, allow_redirects=False) as response:
        assert response.status == 403
    async with http.get(keys) as response:
        assert "forged" not in await response.text(), "the refused form made no key"


async def test_the_session_dies_at_sign_out(make_person, sign_in):
    person = await make_person("admin")
    http = await sign_in(person)
    async with http.get(http.landed) as response:
        token = csrf_of(await response.text())
    stolen = next(c for c in http.cookie_jar if c.key == "pb_console").value
    async with http.post(f"{http.base}/console/auth/logout", data={"csrf": token}, allow_redirects=False) as response:
        assert response.status == 303
        end_session = response.headers["Location"]
    assert "/api/v1/oidc/end-session?" in end_session and "id_token_hint=" in end_session
    async with http.get(end_session) as response:  # RP-initiated logout, back to the console's page
        page = await response.text()
    assert response.status == 200 and str(response.url).endswith("/console/auth/signed-out") and "signed out" in page
    async with ClientSession(cookies={"pb_console": stolen}) as thief, thief.get(http.landed, allow_redirects=False) as response:
        assert response.status == 303 and response.headers["Location"].startswith("/console/auth/login")
    async with http.get(f"{http.base}/console/", allow_redirects=True) as response:
        assert "/api/v1/oidc/login" in str(response.url), "the identity provider's session ended too"


@pytest.mark.parametrize("path", ["/console/", "/console/auth/signed-out", "/console/w/{workspace}/", "/console/w/other/"])
async def test_no_console_page_can_be_framed(make_person, sign_in, path):
    person = await make_person("viewer")
    http = await sign_in(person)
    async with http.get(http.base + path.format(workspace=person.workspace_id)) as response:
        await response.text()
    csp = response.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and response.headers["X-Frame-Options"] == "DENY"


async def test_an_expired_session_opens_nothing_and_is_purged(make_person, sign_in, console_server):
    from datetime import timedelta

    from sqlalchemy import func, select, update

    from patchbay.core.appkeys import SERVICES
    from patchbay.core.console.models import ConsoleSession
    from patchbay.core.console.service import purge_sessions
    from patchbay.core.timeutil import utcnow

    person = await make_person("admin")
    http = await sign_in(person)
    services = console_server.app[SERVICES]
    async with services.db.transaction() as db:
        await db.execute(update(ConsoleSession).values(expires_at=utcnow() - timedelta(seconds=1)))
    async with http.get(http.landed, allow_redirects=False) as response:
        assert response.status == 303 and response.headers["Location"].startswith("/console/auth/login")
    assert await purge_sessions(services) == {"consoleSessionsPurged": 1}
    async with services.db.session() as db:
        assert await db.scalar(select(func.count()).select_from(ConsoleSession)) == 0


async def test_cookies_are_secure_behind_https(aiohttp_client, make_app):
    client = await aiohttp_client(make_app(base_url="https://console.example"))
    response = await client.get("/console/auth/login", allow_redirects=False)
    assert response.status == 302 and response.headers["Location"].startswith("https://console.example/api/v1/oidc/authorize?")
    cookie = response.cookies["pb_console_login"]
    assert cookie["secure"] and cookie["httponly"] and cookie["samesite"] == "Lax"


async def test_signing_out_at_the_identity_provider_ends_the_console_session(make_person, sign_in, console_server):
    from sqlalchemy import select

    from patchbay.core.appkeys import SERVICES
    from patchbay.core.identity.service import sign_out
    from patchbay.core.users.models import SignInSession

    person = await make_person("admin")
    http = await sign_in(person)
    services = console_server.app[SERVICES]
    async with services.db.session() as db:
        idp_sessions = set(await db.scalars(select(SignInSession.id).where(SignInSession.user_id == person.user_id)))
    await sign_out(services, idp_sessions)  # what the IdP's own sign-out does, from any application
    async with http.get(http.landed, allow_redirects=False) as response:
        assert response.status == 303 and response.headers["Location"].startswith("/console/auth/login")
