"""Fixtures of the connection tests: the fake provider server and an app that knows it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from patchbay.core.testing import create_workspace_with_key

_spec = importlib.util.spec_from_file_location("patchbay_tests_fake_provider", Path(__file__).with_name("fake_provider.py"))
fake_provider = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_provider)


@pytest.fixture
async def fake():
    server = fake_provider.FakeProvider()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def fake_app(make_app, fake):
    """``fake_app(plugins=(), **setting_overrides)``: an app with the fake providers and the deployment's OAuth
    app for ``fakeoauth``."""

    def make(*, plugins=(), **overrides):
        overrides.setdefault("providers", fake_provider.provider_settings())
        return make_app(plugins=[fake_provider.FakePack(fake.base), *plugins], **overrides)

    return make


@pytest.fixture
async def api(aiohttp_client, fake_app):
    return await aiohttp_client(fake_app())


@pytest.fixture
async def ws(api):
    return await create_workspace_with_key(api.server.app, plan="enterprise")
