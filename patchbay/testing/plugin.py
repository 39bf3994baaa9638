"""patchbay's pytest plugin (entry point ``pytest11``): fixtures for testing a provider pack against
a fake of its API through a real, in-process patchbay app.

- ``fake_provider_api``: a started :class:`~patchbay.testing.fakes.FakeProviderAPI`;
- ``pack_harness``: ``await pack_harness("acme")`` -> a :class:`PackHarness`: the app (every
  installed pack, ``acme`` aimed at the fake) served on 127.0.0.1, a workspace with an API key,
  and a stored connection of ``acme`` whose client calls the fake with the credential injected as
  the pack injects it.

pytest loads this module in every environment where patchbay is installed, so it imports only what
patchbay depends on: pytest-asyncio, which the fixtures need, is a test extra. Without it the
fixtures still exist and fail the test that asks for them, saying what to install.
"""

from __future__ import annotations

from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

from patchbay.testing.fakes import FakeProviderAPI

#: the credential every field of which a test connection holds, so any declared template renders
TEST_CREDENTIALS = {
    "access_token": "acceptance-token",
    "api_key": "acceptance-key",
    "api_secret": "acceptance-secret",
    "username": "acceptance-user",
    "password": "acceptance-password",
}


def _requires_pytest_asyncio(fixture_function):
    """A stand-in for a fixture of pytest-asyncio where it is not installed: same name, failing the test."""
    name = fixture_function.__name__

    def missing():
        pytest.fail(f"patchbay's fixture {name!r} needs pytest-asyncio: pip install pytest-asyncio", pytrace=False)

    return pytest.fixture(name=name)(missing)


try:
    from pytest_asyncio import fixture as async_fixture
except ImportError:  # a test extra, not a dependency of patchbay: installing patchbay never breaks pytest
    async_fixture = _requires_pytest_asyncio


@attrs.define
class PackHarness:
    provider_name: str
    app: Any
    http: Any  # aiohttp TestClient of the app
    fake: FakeProviderAPI
    workspace: dict[str, Any]
    connection_id: str

    @property
    def registry(self):
        from patchbay.core.appkeys import SERVICES

        return self.app[SERVICES].registry

    @property
    def provider(self):
        return self.registry.provider(self.provider_name)

    @property
    def auth(self):
        from patchbay.core.connections.auth import auth_for

        return auth_for(self.registry, self.provider_name)

    async def for_provider(self, provider_name: str) -> PackHarness:
        """A harness of another provider of the same app (aimed at the fake by ``aim=``), with a
        connection of its own."""
        connection_id = await _connect(self.app, self.workspace, provider_name)
        return PackHarness(provider_name, self.app, self.http, self.fake, self.workspace, connection_id)

    async def client(self):
        """The connection client of the test connection (calls go to the fake)."""
        from patchbay.core.appkeys import SERVICES
        from patchbay.core.connections.client import open_client

        return await open_client(self.app[SERVICES], workspace_id=self.workspace["workspace_id"], connection_id=self.connection_id)


@async_fixture
async def fake_provider_api():
    server = await FakeProviderAPI().start()
    yield server
    await server.close()


@async_fixture
async def pack_harness(tmp_path, fake_provider_api):
    built: list[PackHarness] = []
    async with AsyncExitStack() as stack:

        async def build(provider_name: str, *, plugins=(), overrides: dict[str, Any] | None = None, aim=None) -> PackHarness:
            """``aim``: every provider to point at the fake (default: ``provider_name`` alone)."""
            data_dir = tmp_path / f"patchbay-{len(built)}"
            built.append(await stack.enter_async_context(serve_pack(provider_name, fake_provider_api, data_dir, plugins=plugins, overrides=overrides, aim=aim)))
            return built[-1]

        yield build


@asynccontextmanager
async def serve_pack(provider_name: str, fake: FakeProviderAPI, data_dir: Path, *, plugins=(), overrides: dict[str, Any] | None = None, aim=None):
    """A :class:`PackHarness` of ``provider_name`` (and the providers of ``aim``) aimed at ``fake``,
    its app served on 127.0.0.1 over a SQLite database in ``data_dir`` until the block ends."""
    from aiohttp.test_utils import TestClient, TestServer

    from patchbay.core.app import create_app
    from patchbay.core.settings import load_settings
    from patchbay.testing import create_workspace_with_key

    environ = {
        "PATCHBAY_DATA_DIR": str(data_dir),
        "PATCHBAY_SECRET_KEY": "acceptance-secret-key",
        "PATCHBAY_SCHEDULER": "false",
        "PATCHBAY_ALLOW_INSECURE_TARGETS": "true",
        "PATCHBAY_WORKERS": "0",
    }
    settings = load_settings({}, environ)
    settings.providers = {name: {"api_base_url": fake.url} for name in (aim or (provider_name,))}
    settings.providers[provider_name] = {"api_base_url": fake.url, **(overrides or {})}
    http = TestClient(TestServer(create_app(settings, plugins=plugins, background=False)))
    await http.start_server()
    try:
        app = http.server.app
        workspace = await create_workspace_with_key(app)
        connection_id = await _connect(app, workspace, provider_name)
        yield PackHarness(provider_name, app, http, fake, workspace, connection_id)
    finally:
        await http.close()


async def _connect(app, workspace: dict[str, Any], provider_name: str) -> str:
    """A stored connection of ``provider_name`` holding :data:`TEST_CREDENTIALS`."""
    from patchbay.core.appkeys import SERVICES
    from patchbay.testing import add_connection

    provider = app[SERVICES].registry.provider(provider_name)
    if provider is None:
        pytest.fail(f"no installed pack defines provider {provider_name!r}")
    params = {name: "acceptance" for name in provider.connection_params}
    return await add_connection(app, workspace["workspace_id"], provider_name, params=params, credentials=dict(TEST_CREDENTIALS))
