"""Fixtures of the connect UI tests: the fake API-key provider and an app that knows it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from patchbay.core.testing import create_workspace_with_key
from tests.serve_process import free_port

_spec = importlib.util.spec_from_file_location("patchbay_tests_fake_keys", Path(__file__).with_name("fake_keys.py"))
fake_keys = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_keys)
FakeKeys, FakeKeysPack, API_KEY = fake_keys.FakeKeys, fake_keys.FakeKeysPack, fake_keys.API_KEY


@pytest.fixture
async def keys():
    server = FakeKeys()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def make_connect_app(make_app, keys):
    """``make_connect_app(**setting_overrides)``: an app with the fake providers."""

    def make(*, plugins=(), **overrides):
        return make_app(plugins=[FakeKeysPack(keys.base), *plugins], **overrides)

    return make


@pytest.fixture
def serve_connect(aiohttp_server, make_connect_app):
    """``await serve_connect(**overrides)``: the app on a real port that is also its public base
    URL (the OAuth callback and the hosted URL point at it), with ``base`` and an enterprise
    ``workspace``."""

    async def serve(**overrides):
        port = free_port()
        server = await aiohttp_server(make_connect_app(base_url=f"http://127.0.0.1:{port}", **overrides), port=port)
        server.base = f"http://127.0.0.1:{port}"
        server.workspace = await create_workspace_with_key(server.app, plan="enterprise")
        return server

    return serve


@pytest.fixture
async def connect_api(aiohttp_client, make_connect_app, database_url):
    """A test client on SQLite and on PostgreSQL."""
    return await aiohttp_client(make_connect_app(database_url=database_url))


@pytest.fixture
async def ws(connect_api):
    return await create_workspace_with_key(connect_api.server.app, plan="enterprise")


async def _through_page(http, base: str, token: str, provider: str, form: dict[str, str]):
    """Open the hosted page with ``token`` and submit ``form`` to ``provider``'s step as a browser
    without JavaScript would; answers the submit's response (not followed)."""
    await http.get(f"{base}/connect/ui?session={token}")
    page = await (await http.get(f"{base}/connect/ui/providers/{provider}")).text()
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    return await http.post(f"{base}/connect/ui/providers/{provider}", data={"csrf": csrf, **form}, allow_redirects=False)


@pytest.fixture
def through_page():
    """``await through_page(http, base, token, provider, form)``: see ``_through_page``."""
    return _through_page


_oauth_spec = importlib.util.spec_from_file_location("patchbay_tests_fake_provider_connect_ui", Path(__file__).parents[1] / "connections" / "fake_provider.py")
fake_provider = importlib.util.module_from_spec(_oauth_spec)
_oauth_spec.loader.exec_module(fake_provider)


@pytest.fixture
async def oauth_fake():
    """The connection tests' fake OAuth provider server (``fakeoauth``: authorize, token, API)."""
    server = fake_provider.FakeProvider()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def with_oauth(oauth_fake):
    """Setting overrides and plugins that add ``fakeoauth`` (with the deployment's OAuth app unless
    ``configured=False``)."""

    def make(configured: bool = True) -> dict:
        return {"plugins": [fake_provider.FakePack(oauth_fake.base)], "providers": fake_provider.provider_settings() if configured else {}}

    return make
