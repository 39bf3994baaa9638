"""The Connect UI offers only providers that can connect: any provider that is not OAuth, and an
OAuth provider once an app is set for the workspace or the deployment; a session that names
providers offers those, configured or not."""

from __future__ import annotations

import re

import pytest
from aiohttp import ClientSession, CookieJar

from patchbay.core.appkeys import SERVICES
from patchbay.core.settings import AdminSettings
from patchbay.core.testing import create_workspace_with_key

OPERATOR = {"x-api-key": "operator-secret"}
_OFFERED = re.compile(r'href="/connect/ui/providers/([^"]+)"')


@pytest.fixture
async def server(aiohttp_server, make_app):
    # hubspot's app is the settings file's: configured from the start
    app = make_app(admin=AdminSettings(api_key="operator-secret"), providers={"hubspot": {"client_id": "file-id", "client_secret": "file-secret"}})
    server = await aiohttp_server(app)
    server.workspace = await create_workspace_with_key(app, plan="enterprise")
    return server


async def _offered(server, body: dict | None = None) -> list[str]:
    """The provider names the hosted page lists for a new session made with ``body``."""
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as http:
        async with http.post(
            server.make_url("/connect/v1/connect-sessions"), json={"endUser": {"id": "u1"}, **(body or {})}, headers=server.workspace["headers"]
        ) as made:
            assert made.status == 201, await made.text()
            token = (await made.json())["token"]
        async with http.get(server.make_url(f"/connect/ui?session={token}")) as response:
            assert response.status == 200
        async with http.get(server.make_url("/connect/ui/providers")) as response:
            assert response.status == 200, await response.text()
            return _OFFERED.findall(await response.text())


async def test_the_default_session_offers_no_unconfigured_oauth_provider(server):
    registry = server.app[SERVICES].registry
    offered = await _offered(server)
    oauth = [name for name in offered if registry.provider(name).auth_mode == "oauth2"]
    assert oauth == ["hubspot"], "the only OAuth provider offered is the one the file configures"
    assert "airtable-pat" in offered and "stripe-api-key" in offered, "API-key providers are offered"
    assert len(offered) < len(registry.providers)


async def test_an_app_set_through_the_api_makes_a_provider_offered(server):
    headers = server.workspace["headers"]
    assert "github" not in await _offered(server) and "notion" not in await _offered(server)
    async with ClientSession() as http:
        async with http.patch(server.make_url("/connect/v1/integrations/github"), json={"clientId": "own", "clientSecret": "own-secret"}, headers=headers) as r:
            assert r.status == 200, await r.text()
        async with http.patch(
            server.make_url("/connect/v1/deployment/integrations/notion"), json={"clientId": "d", "clientSecret": "d-secret"}, headers=OPERATOR
        ) as r:
            assert r.status == 200, await r.text()
    offered = await _offered(server)
    assert "github" in offered and "notion" in offered
    other = await create_workspace_with_key(server.app, plan="enterprise")
    server.workspace = other
    offered = await _offered(server)
    assert "notion" in offered and "github" not in offered, "the workspace's app is its own; the deployment's is everyone's"


async def test_a_session_that_names_providers_offers_them(server):
    assert await _offered(server, {"allowedProviders": ["github", "airtable-pat"]}) == ["airtable-pat", "github"]
