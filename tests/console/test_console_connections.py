"""The Connections pages over HTTP: a connection made through the connect API (with an API key)
listed with its provider's monogram, account, status, last refresh and last use; filters, search
and keyset pages; its page (metadata, scopes, the credential's kind, refresh history, recent
calls) never showing a stored secret; check health, reconnect, connect link and delete; and the
attacks (another workspace's id, a viewer's POST, a POST without its CSRF token)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from aiohttp import ClientSession

from patchbay.core.appkeys import SERVICES
from patchbay.core.connect_ui.models import ConnectSession
from patchbay.core.connections.models import Connection
from patchbay.core.connections.refresh import RefreshFailed, refresh_connection
from patchbay.testing import add_connection
from tests.console.conftest import api_key_headers, console_get, console_post

_spec = importlib.util.spec_from_file_location("patchbay_tests_console_fake_provider", Path(__file__).parents[1] / "connections" / "fake_provider.py")
fake_provider = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_provider)

ACCESS_TOKEN = "at-very-secret-4f1c9e"
REFRESH_TOKEN = "rt-very-secret-77ab20"


@pytest.fixture
async def fake():
    server = fake_provider.FakeProvider()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def console_plugins(fake):
    return [fake_provider.FakePack(fake.base)]


@pytest.fixture
def console_settings():
    return {"providers": fake_provider.provider_settings()}


async def connect_through_api(console_server, workspace_id: str) -> str:
    """A fakekey connection made with the connect API and one call through the proxy."""
    headers = await api_key_headers(console_server, workspace_id)
    async with ClientSession(base_url=console_server.base, headers=headers) as api:
        body = {"credentials": {"apiKey": fake_provider.API_KEY}, "metadata": {"displayName": "Acme Sales", "region": "eu"}}
        async with api.post("/connect/v1/providers/fakekey/connect", json=body) as response:
            assert response.status == 201, await response.text()
            connection_id = (await response.json())["connectionId"]
        async with api.get("/connect/v1/proxy/fakekey/contacts", params={"limit": "5"}) as response:
            assert response.status == 200, await response.text()
    return connection_id


def rows_of(page: str) -> list[str]:
    return re.findall(r'href="/console/w/[^/]+/connections/([0-9a-f-]{36})"', page)


async def test_a_connection_made_through_the_api_is_listed_and_shown_never_with_its_secret(console_server, make_person, sign_in, fake):
    person = await make_person("viewer")
    connection_id = await connect_through_api(console_server, person.workspace_id)
    http = await sign_in(person)
    base = f"/console/w/{person.workspace_id}"
    status, page = await console_get(http, f"{base}/connections")
    assert status == 200 and rows_of(page) == [connection_id]
    assert 'class="logo" aria-hidden="true">F<' in page and "Fake Key" in page and "Acme Sales" in page and "connected" in page
    assert page.count(" UTC") >= 1, "the last use is shown"
    status, page = await console_get(http, f"{base}/connections/{connection_id}")
    assert status == 200
    assert 'API key <span class="muted">(stored: API key; never shown)' in page and "Acme Sales" in page and "region" in page and "GET /contacts" in page
    assert "Check health" not in page, "a viewer sees no action"
    assert fake_provider.API_KEY not in page
    # the filters and the search
    for query, found in [
        ("provider=fakekey", True),
        ("provider=fakeoauth", False),
        ("status=connected", True),
        ("status=invalid", False),
        ("q=acme", True),
        ("q=nothing-like-it", False),
        ("endUser=u-1", False),
        (f"q={connection_id}", True),
    ]:
        status, page = await console_get(http, f"{base}/connections?{query}")
        assert status == 200 and (rows_of(page) == [connection_id]) is found, query
    status, page = await console_get(http, f"{base}/connections?status=bogus")
    assert status == 400 and "status must be one of" in page
    status, _ = await console_get(http, f"{base}/connections?cursor=not-a-cursor")
    assert status == 400


async def test_no_page_shows_a_stored_secret(console_server, make_person, sign_in, fake):
    """The API key, an imported access token and refresh token: never in any page's HTML."""
    person = await make_person("admin")
    key_connection = await connect_through_api(console_server, person.workspace_id)
    headers = await api_key_headers(console_server, person.workspace_id)
    fake.refresh_tokens.add(REFRESH_TOKEN)
    async with ClientSession(base_url=console_server.base, headers=headers) as api:
        body = {"providerType": "fakeoauth", "credentials": {"accessToken": ACCESS_TOKEN, "refreshToken": REFRESH_TOKEN}, "metadata": {"name": "Ops team"}}
        async with api.post("/api/connections/import", json=body) as response:
            assert response.status == 201, await response.text()
            oauth_connection = (await response.json())["connectionId"]
    services = console_server.app[SERVICES]
    await refresh_connection(services, oauth_connection, workspace_id=person.workspace_id, force=True)
    http = await sign_in(person)
    base = f"/console/w/{person.workspace_id}"
    pages = [f"{base}/connections", f"{base}/connections/{key_connection}", f"{base}/connections/{oauth_connection}", f"{base}/logs"]
    status, page = await console_get(http, f"{base}/connections/{oauth_connection}")
    assert "(stored: access token, refresh token; never shown)" in page
    refreshes = re.findall(r'href="(/console/w/[^"]+/logs/refresh/[^"]+)"', page)
    assert len(refreshes) == 1, "the refresh is in the connection's refresh history"
    pages += refreshes
    status, logs = await console_get(http, f"{base}/logs")
    pages += re.findall(r'href="(/console/w/[^"]+/logs/(?:proxy|refresh)/[^"]+)"', logs)
    secrets = [fake_provider.API_KEY, ACCESS_TOKEN, REFRESH_TOKEN, *fake.access_tokens]
    for path in pages:
        status, page = await console_get(http, path)
        assert status == 200, path
        for secret in secrets:
            assert secret not in page, (path, secret)


async def test_the_list_pages_by_keyset(console_server, make_person, sign_in):
    person = await make_person("viewer")
    made = [await add_connection(console_server.app, person.workspace_id, "fakekey", meta={"name": f"n{i}"}) for i in range(55)]
    http = await sign_in(person)
    status, first = await console_get(http, f"/console/w/{person.workspace_id}/connections?provider=fakekey")
    assert status == 200 and len(rows_of(first)) == 50
    next_url = re.search(r'href="([^"]+)" rel="next"', first).group(1).replace("&amp;", "&")
    assert "provider=fakekey" in next_url and "cursor=" in next_url and "offset" not in next_url
    status, second = await console_get(http, next_url)
    assert status == 200 and len(rows_of(second)) == 5 and 'rel="next"' not in second
    assert sorted(rows_of(first) + rows_of(second)) == sorted(made)


async def test_a_manager_checks_health_reconnects_makes_a_link_and_deletes(console_server, make_person, sign_in):
    person = await make_person("manager")
    connection_id = await connect_through_api(console_server, person.workspace_id)
    http = await sign_in(person)
    base = f"/console/w/{person.workspace_id}/connections"
    page_path = f"{base}/{connection_id}"
    status, _, location = await console_post(http, f"{page_path}/check-health", token_from=page_path)
    assert status == 303 and location == page_path
    services = console_server.app[SERVICES]
    async with services.db.session() as session:
        assert (await session.get(Connection, connection_id)).health == "healthy"
    status, page = await console_get(http, page_path)
    assert "healthy" in page
    status, page, _ = await console_post(http, f"{page_path}/reconnect", token_from=page_path)
    assert status == 200 and "Reconnect link" in page
    url = re.search(r'id="connect-url">([^<]+)<', page).group(1)
    assert url.startswith(console_server.base + "/connect/ui?session=pbcs_")
    status, page, _ = await console_post(
        http, f"{base}/link", {"endUserId": "user-42", "email": "u42@example.com", "provider": "fakekey"}, token_from=f"{base}/link"
    )
    assert status == 200 and "/connect/ui?session=pbcs_" in page
    async with services.db.session() as session:
        from sqlalchemy import select

        sessions = list(await session.scalars(select(ConnectSession).order_by(ConnectSession.created_at)))
    assert [(s.reconnect_id, s.end_user_id) for s in sessions] == [(connection_id, person.email), (None, "user-42")]
    assert sessions[1].allowed_providers == ["fakekey"]
    status, page, _ = await console_post(http, f"{base}/link", {"endUserId": "u", "provider": "no-such-provider"}, token_from=f"{base}/link")
    assert status == 400 and "unknown provider" in page
    status, _, location = await console_post(http, f"{page_path}/delete", token_from=page_path)
    assert status == 303 and location == base
    status, _ = await console_get(http, page_path)
    assert status == 404


async def test_attacks_another_workspaces_connection_a_viewers_post_a_form_without_csrf(console_server, make_person, sign_in):
    mine = await make_person("manager")
    theirs = await make_person("admin")
    their_connection = await connect_through_api(console_server, theirs.workspace_id)
    own_connection = await connect_through_api(console_server, mine.workspace_id)
    http = await sign_in(mine)
    base = f"/console/w/{mine.workspace_id}/connections"
    status, _ = await console_get(http, f"{base}/{their_connection}")
    assert status == 404
    status, page = await console_get(http, base)
    assert their_connection not in page
    for verb in ("check-health", "reconnect", "delete"):
        status, _, _ = await console_post(http, f"{base}/{their_connection}/{verb}", token_from=base)
        assert status == 404, verb
    async with console_server.app[SERVICES].db.session() as session:
        theirs_row = await session.get(Connection, their_connection)
        assert theirs_row is not None and theirs_row.last_health_check_at is None, "nothing ran on their connection"
    # a form without its token, or with a forged one
    for form in ({}, {"csrf": "forged"}):
        status, _, _ = await console_post(http, f"{base}/{own_connection}/delete", form)
        assert status == 403
    # a viewer of the same workspace reads but may not write
    viewer = await make_person("viewer", mine.workspace_id)
    watcher = await sign_in(viewer)
    status, _ = await console_get(watcher, f"{base}/{own_connection}")
    assert status == 200
    for verb in ("check-health", "reconnect", "delete"):
        status, _, _ = await console_post(watcher, f"{base}/{own_connection}/{verb}", token_from=base)
        assert status == 403, verb
    status, _, _ = await console_post(watcher, f"{base}/link", {"endUserId": "x"}, token_from=base)
    assert status == 403
    status, _ = await console_get(watcher, f"{base}/link")
    assert status == 403
    async with console_server.app[SERVICES].db.session() as session:
        assert (await session.get(Connection, own_connection)) is not None


async def test_the_refresh_history_keeps_failed_refreshes_too(console_server, make_person, sign_in, fake):
    person = await make_person("viewer")
    headers = await api_key_headers(console_server, person.workspace_id)
    fake.refresh_tokens.add(REFRESH_TOKEN)
    async with ClientSession(base_url=console_server.base, headers=headers) as api:
        body = {"providerType": "fakeoauth", "credentials": {"accessToken": ACCESS_TOKEN, "refreshToken": REFRESH_TOKEN}}
        async with api.post("/api/connections/import", json=body) as response:
            connection_id = (await response.json())["connectionId"]
    services = console_server.app[SERVICES]
    await refresh_connection(services, connection_id, workspace_id=person.workspace_id, force=True)
    fake.refresh_error = "temporarily_unavailable"
    with pytest.raises(RefreshFailed):
        await refresh_connection(services, connection_id, workspace_id=person.workspace_id, force=True)
    http = await sign_in(person)
    status, page = await console_get(http, f"/console/w/{person.workspace_id}/connections/{connection_id}")
    history = page.split('id="refreshes"', 1)[1].split('id="calls"', 1)[0]
    assert status == 200 and history.count("<tr>") == 3, "a header and two refreshes"
    assert ">503<" in history and "refresh refused" in history and ">200<" in history
    status, page = await console_get(http, f"/console/w/{person.workspace_id}/logs?kind=refresh&status=failed")
    assert status == 200 and page.count("/logs/refresh/") == 1 and "POST /token" in page
