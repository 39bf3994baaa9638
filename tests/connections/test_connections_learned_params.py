"""Connection parameters that only the token response carries (Pipedrive's ``api_domain``,
Salesforce's ``instance_url``): the OAuth login does not ask for them, the callback takes them from
the token response, and a connection is never stored without them."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from sqlalchemy import select

from patchbay import Provider, hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.models import Connection
from patchbay.core.testing import create_workspace_with_key

_spec = importlib.util.spec_from_file_location("patchbay_tests_fake_provider_lp", Path(__file__).with_name("fake_provider.py"))
fake_provider = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_provider)


class RegionalPack:
    def __init__(self, base: str) -> None:
        self.base = base

    @hookimpl
    def register_providers(self):
        return [
            Provider(
                name="fakeregional",
                display_name="Fake Regional",
                category="crm",
                auth_mode="oauth2",
                authorization_url="{server}/authorize",
                token_url="{server}/token",
                api_base_url="{api_domain}/api",
                connection_params=("server", "api_domain"),
                connection_param_defaults={"server": self.base},
                capabilities=("oauth", "proxy"),
            )
        ]


@pytest.fixture
async def regional(aiohttp_client, make_app, fake):
    secrets = {"client_id": fake_provider.CLIENT_ID, "client_secret": fake_provider.CLIENT_SECRET}
    app = make_app(plugins=[RegionalPack(fake.base)], providers={"fakeregional": secrets})
    client = await aiohttp_client(app)
    return client, await create_workspace_with_key(app, plan="enterprise")


async def run_login(client, ws):
    login = await client.get("/auth/fakeregional/login", params={"redirect_uri": "https://app.example.com/done"}, headers=ws["headers"], allow_redirects=False)
    assert login.status == 302, await login.text()  # api_domain was not asked for
    async with aiohttp.ClientSession() as session, session.get(login.headers["Location"], allow_redirects=False) as response:
        callback = urlsplit(response.headers["Location"])
    done = await client.get(callback.path, params=dict(parse_qs(callback.query)), allow_redirects=False)
    assert done.status == 302
    return parse_qs(urlsplit(done.headers["Location"]).query)


async def test_parameter_from_the_token_response_completes_the_connection(regional, fake):
    client, ws = regional
    fake.extra_token_fields = {"api_domain": fake.base}
    back = await run_login(client, ws)
    assert back["status"] == ["connected"], back
    async with client.server.app[SERVICES].db.session() as session:
        connection = await session.scalar(select(Connection).where(Connection.id == back["connectionId"][0]))
    assert connection.params["api_domain"] == fake.base


async def test_a_connection_missing_a_parameter_is_not_stored(regional, fake):
    client, ws = regional
    back = await run_login(client, ws)
    assert back["status"] == ["error"] and "api_domain" in back["error_description"][0], back
    async with client.server.app[SERVICES].db.session() as session:
        assert (await session.scalars(select(Connection))).all() == []
