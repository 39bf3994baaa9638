"""NUL in a path or a query value, sent over HTTP to the app on SQLite and PostgreSQL (which cannot
compare such text: it answered 500 on routes that looked the id up): a path holding it names
nothing (404), a query parameter holding it is a 400 naming the parameter; never a 5xx."""

from __future__ import annotations

import pytest

from patchbay.core.testing import create_workspace_with_key

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)

PATHS_WITH_IDS = [
    "/connect/v1/flows/abc%00def",
    "/connect/v1/connections/abc%00",
    "/connect/v1/connect-sessions/%00",
    "/connect/v1/records/x%00y",
    "/leads/%00",
    "/connect/v1/approvals/%00",
    "/api/v1/organizations/%00",
    "/connect/v1/webhooks/events/%00",
]


@pytest.fixture
async def api(aiohttp_client, make_app, database_url):
    client = await aiohttp_client(make_app(database_url=database_url))
    return client, await create_workspace_with_key(client.server.app, plan="enterprise")


async def test_a_path_holding_nul_names_nothing(api):
    client, ws = api
    for path in PATHS_WITH_IDS:
        response = await client.get(path, headers=ws["headers"])
        assert response.status == 404, (path, response.status, await response.text())
        assert (await response.json())["statusCode"] == 404


async def test_a_query_value_holding_nul_is_400_naming_it(api):
    client, ws = api
    for path, name in (
        ("/connect/v1/flows?search=a%00b", "search"),
        ("/connect/v1/webhooks/events?provider=%00", "provider"),
        ("/connect/v1/providers?category=x%00", "category"),
    ):
        response = await client.get(path, headers=ws["headers"])
        assert response.status == 400, (path, response.status, await response.text())
        assert (await response.json())["message"] == f"Query parameter '{name}' must not contain the NUL character"


async def test_a_signed_value_with_a_non_ascii_signature_is_refused_not_a_server_error(api):
    client, _ = api
    for path in ("/api/v1/oidc/login?interaction=a.%C3%A9", "/api/v1/oidc/signout?t=a.%C3%A9"):
        response = await client.get(path, allow_redirects=False)
        assert response.status < 500, (path, response.status, await response.text())
    client.session.cookie_jar.update_cookies({"pb_connect": "abc.\u00e9"})
    response = await client.get("/connect/ui/providers", allow_redirects=False)
    assert response.status < 500, await response.text()
