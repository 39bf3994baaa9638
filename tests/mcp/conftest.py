"""Fixtures of the MCP tests: a fake provider API (``acme``, with actions), an app that knows it,
running on a real port, a workspace with a connection to it, and an MCP client session."""

from __future__ import annotations

import contextlib
from typing import Any

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from patchbay import Action, Provider, hookimpl
from patchbay.core.mcp.access import mint_access_token
from patchbay.core.mcp.grants import create_grant
from patchbay.core.testing import services_of
from patchbay.testing import FakeProviderAPI, add_connection, create_workspace_with_key


async def create_item(client, inputs):
    response = await client.request("POST", "/items", json=inputs)
    if response.status >= 400:
        raise RuntimeError(f"acme answered {response.status}: {response.text}")
    return response.json()


async def get_item(client, inputs):
    response = await client.request("GET", f"/items/{inputs['id']}")
    if response.status >= 400:
        raise RuntimeError(f"acme answered {response.status}: {response.json().get('message')}")
    return response.json()


class AcmePack:
    """A provider whose API is the test's :class:`FakeProviderAPI`."""

    def __init__(self, base: str) -> None:
        self.base = base

    @hookimpl
    def register_providers(self):
        return [
            Provider(
                name="acme",
                display_name="Acme",
                category="crm",
                auth_mode="api_key",
                api_base_url=self.base,
                credential_headers={"Authorization": "Bearer {api_key}"},
            )
        ]

    @hookimpl
    def register_actions(self, register):
        register(
            "acme",
            Action(
                name="create_item",
                display_name="Create item",
                description="Create an item",
                run=create_item,
                inputs={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            ),
        )
        register(
            "acme",
            Action(
                name="get_item",
                display_name="Get item",
                description="Read an item",
                run=get_item,
                inputs={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
            ),
        )


def _created(request) -> tuple[int, Any]:
    import json

    return 201, {"id": "it_1", **json.loads(request.body or b"{}")}


@pytest.fixture
async def acme():
    server = FakeProviderAPI(
        {
            ("POST", "/items"): _created,
            ("GET", "/items/it_1"): (200, {"id": "it_1", "name": "first"}),
            ("GET", "/items/missing"): (404, {"message": "no item missing"}),
        }
    )
    await server.start()
    yield server
    await server.close()


@pytest.fixture
async def mcp_app(aiohttp_client, make_app, acme, database_url):
    """The app on the test's database (both, where marked), served on a real port."""
    return await aiohttp_client(make_app(plugins=[AcmePack(acme.url)], database_url=database_url))


@pytest.fixture
async def setup(mcp_app) -> dict[str, Any]:
    """A workspace with an ``acme`` connection and a grant of it to a client, with its token."""
    app = mcp_app.server.app
    ws = await create_workspace_with_key(app, plan="enterprise")
    connection = await add_connection(app, ws["workspace_id"], "acme", credentials={"api_key": "secret-1"})
    services = services_of(app)
    grant = await create_grant(services, workspace_id=ws["workspace_id"], user_id=None, client_id="test-agent", connection_ids=[connection], end_user_id="eu-1")
    token = await mint_access_token(services, grant, lifetime=600)
    return {**ws, "connection_id": connection, "grant": grant, "token": token, "services": services, "url": str(mcp_app.make_url("/mcp"))}


@pytest.fixture
def mcp_session():
    """``mcp_session(url, token)``: an async context manager of an initialized client session."""
    return _mcp_session


@contextlib.asynccontextmanager
async def _mcp_session(url: str, token: str):
    """An initialized MCP client session (the official SDK's streamable HTTP client) with ``token``."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
