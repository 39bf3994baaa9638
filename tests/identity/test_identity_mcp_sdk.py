"""The official ``mcp`` Python SDK's OAuth client provider against a running patchbay, on SQLite and
PostgreSQL: the 401 of ``/mcp`` and its ``resource_metadata`` (RFC 9728), authorization server
discovery, dynamic registration or a Client ID Metadata Document, PKCE, ``resource`` (RFC 8707),
``iss`` (RFC 9207), the browser step answered by a test user who signs in and picks a connection on
the consent page over HTTP, the tools of that connection called against the fake provider (an action
and the proxy) before and after a refresh that rotates; the connection not picked stays out."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import httpx2
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from patchbay.core.appkeys import SERVICES
from patchbay.core.outbound import Outbound
from patchbay.core.users.service import create_user
from patchbay.core.workspaces.service import add_member
from patchbay.testing import add_connection, create_workspace_with_key
from tests.attacker.test_attacker_outbound import PUBLIC, make_tls
from tests.identity.conftest import PASSWORD, form_fields, limits
from tests.mcp.conftest import AcmePack, acme  # noqa: F401  (the fake provider fixture)
from tests.node_peers import installed
from tests.serve_process import free_port

pytestmark = pytest.mark.both_databases
CALLBACK = "http://localhost:3999/callback"


class Storage:
    """The SDK's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """The user's browser: opens the authorization URL, signs in, picks the connection on the
    consent page and stops at the client's redirect, whose query the callback handler answers."""

    def __init__(self, email: str, connection_id: str) -> None:
        self.email, self.connection_id = email, connection_id
        self.pages: list[str] = []
        self.result: AuthorizationCodeResult | None = None

    async def open(self, url: str) -> None:
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            for _ in range(10):
                if url.startswith(CALLBACK):
                    query = {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}
                    self.result = AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))
                    return
                async with http.get(url, allow_redirects=False) as response:
                    if response.status in (302, 303):
                        url = str(response.url.join(aiohttp.client.URL(response.headers["Location"])))
                        continue
                    page = await response.text()
                assert response.status == 200, page[:500]
                self.pages.append(page)
                path = urlsplit(url).path
                if path.endswith("/login"):
                    data = [*form_fields(page).items(), ("email", self.email), ("password", PASSWORD)]
                else:
                    data = [*form_fields(page).items(), ("decision", "allow"), ("connection", self.connection_id)]
                async with http.post(response.url.with_path(path).with_query(None), data=data, allow_redirects=False) as posted:
                    assert posted.status == 303, await posted.text()
                    url = str(posted.url.join(aiohttp.client.URL(posted.headers["Location"])))
        raise AssertionError("the browser went round in circles")

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


@pytest.fixture
async def running(aiohttp_client, make_app, acme, database_url):  # noqa: F811
    """patchbay on a real port whose public URL is its own (the resource the SDK checks), with a
    user (admin of a workspace holding an ``acme`` connection)."""

    async def start(**overrides: Any) -> dict[str, Any]:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        app = make_app(plugins=[AcmePack(acme.url)], database_url=database_url, base_url=base, rate_limits={key: "off" for key in limits()}, **overrides)
        client = await aiohttp_client(app, server_kwargs={"port": port})
        workspace = await create_workspace_with_key(app, plan="enterprise")
        connection = await add_connection(app, workspace["workspace_id"], "acme", credentials={"api_key": "secret-1"})
        async with app[SERVICES].db.transaction() as session:
            user = await create_user(session, email="agent-owner@example.com", password=PASSWORD, name="Agent Owner")
            await add_member(session, workspace_id=workspace["workspace_id"], user_id=user.id, role="admin")
        return {"app": app, "client": client, "base": base, "connection": connection, "workspace": workspace, "email": "agent-owner@example.com"}

    return start


async def list_tools(url: str, auth: OAuthClientProvider) -> list[str]:
    async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return [tool.name for tool in (await session.list_tools()).tools]


def agent_metadata() -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name="SDK agent",
        redirect_uris=[CALLBACK],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


async def call_tools(url: str, auth: OAuthClientProvider, *calls: tuple[str, dict[str, Any]]) -> tuple[list[str], list[Any]]:
    """One session: the tool names, and the result of each ``(name, arguments)`` call."""
    async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names = [tool.name for tool in (await session.list_tools()).tools]
                return names, [await session.call_tool(name, arguments) for name, arguments in calls]


async def test_the_sdk_calls_the_picked_connections_tools_and_no_others_across_a_refresh(running, acme):  # noqa: F811
    server = await running()
    other = await add_connection(server["app"], server["workspace"]["workspace_id"], "acme", credentials={"api_key": "secret-2"})
    url = server["base"] + "/mcp"
    browser = Browser(server["email"], server["connection"])  # the user picks the first connection only
    storage = Storage()
    provider = OAuthClientProvider(url, agent_metadata(), storage, redirect_handler=browser.open, callback_handler=browser.callback)
    not_picked = [f"acme_{other[:8]}__get_item", f"acme_{other[:8]}__proxy", f"acme_{server['connection'][:8]}__get_item"]
    calls = [
        ("acme__create_item", {"name": "by the agent"}),
        ("acme__proxy", {"method": "GET", "path": "/items/it_1"}),
        *((name, {"id": "it_1"} if name.endswith("get_item") else {"method": "GET", "path": "/items/it_1"}) for name in not_picked),
    ]
    for round_ in ("first token", "refreshed token"):
        if round_ == "refreshed token":
            before = storage.tokens.refresh_token
            provider.context.token_expiry_time = 1.0  # long past: the SDK refreshes before the next request
        seen = len(acme.requests)
        names, results = await call_tools(url, provider, *calls)
        assert names == ["acme__create_item", "acme__get_item", "acme__proxy"], (round_, names)
        created, proxied, *refused = results
        assert not created.is_error and created.structured_content["name"] == "by the agent", round_
        assert not proxied.is_error and proxied.structured_content["status"] == 200, round_
        assert proxied.structured_content["body"] == {"id": "it_1", "name": "first"}, round_
        assert all(result.is_error and "Unknown tool" in result.content[0].text for result in refused), (round_, refused)
        made = acme.requests[seen:]
        assert [(request.method, request.path) for request in made] == [("POST", "/items"), ("GET", "/items/it_1")], round_
        assert {request.headers["Authorization"] for request in made} == {"Bearer secret-1"}, round_  # never the other connection's key
    assert storage.tokens.refresh_token != before


async def expire_and_list(url: str, provider: OAuthClientProvider, storage: Storage) -> tuple[str, list[str]]:
    """Let the access token expire, list again: the SDK refreshes (rotating the refresh token)."""
    before = storage.tokens.refresh_token
    provider.context.token_expiry_time = 1.0  # long past
    tools = await list_tools(url, provider)
    return before, tools


async def test_the_sdk_registers_authorizes_calls_mcp_and_refreshes(running):
    server = await running()
    url = server["base"] + "/mcp"
    browser = Browser(server["email"], server["connection"])
    storage = Storage()
    provider = OAuthClientProvider(url, agent_metadata(), storage, redirect_handler=browser.open, callback_handler=browser.callback)
    tools = await list_tools(url, provider)
    assert "acme__create_item" in tools, tools  # the tools of the connection the user picked
    assert any("SDK agent" in page and 'id="unverified-agent"' in page for page in browser.pages)  # the consent page
    claims = await server["app"][SERVICES].signing_keys.verify(storage.tokens.access_token)
    assert claims["aud"] == url and claims["client_id"] == storage.client_info.client_id and claims["grant_id"]
    before, again = await expire_and_list(url, provider, storage)
    assert again == tools and storage.tokens.refresh_token != before
    assert (await server["app"][SERVICES].signing_keys.verify(storage.tokens.access_token))["grant_id"] == claims["grant_id"]


async def test_the_sdk_uses_a_client_id_metadata_document(running, tmp_path):
    server_tls, client_tls = make_tls(tmp_path)
    documents = web.Application()
    host = TestServer(documents, host=PUBLIC, scheme="https")

    async def document(request: web.Request) -> web.Response:
        return web.json_response(
            {
                "client_id": f"https://{PUBLIC}:{host.port}/agents/sdk.json",
                "client_name": "SDK agent by document",
                "redirect_uris": [CALLBACK],
                "grant_types": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_method": "none",
            }
        )

    documents.router.add_get("/agents/sdk.json", document)
    await host.start_server(ssl=server_tls)
    try:
        server = await running()
        server["app"][SERVICES].outbound.ssl_context = client_tls  # the test CA; insecure targets allowed as in every test
        outbound: Outbound = server["app"][SERVICES].outbound
        await outbound.close()
        await outbound.start()
        metadata_url = f"https://{PUBLIC}:{host.port}/agents/sdk.json"
        url = server["base"] + "/mcp"
        browser = Browser(server["email"], server["connection"])
        storage = Storage()
        provider = OAuthClientProvider(
            url, agent_metadata(), storage, redirect_handler=browser.open, callback_handler=browser.callback, client_metadata_url=metadata_url
        )
        tools = await list_tools(url, provider)
        assert tools
        assert storage.client_info.client_id == metadata_url
        assert any("SDK agent by document" in page for page in browser.pages)
        claims = await server["app"][SERVICES].signing_keys.verify(storage.tokens.access_token)
        assert claims["client_id"] == metadata_url and claims["aud"] == url
        before, again = await expire_and_list(url, provider, storage)
        assert again == tools and storage.tokens.refresh_token != before
    finally:
        await host.close()


async def test_the_typescript_sdk_authorizes_with_its_own_provider_and_calls_across_a_refresh(running, acme):  # noqa: F811
    """The TypeScript SDK's OAuth client provider (tests/mcp/node/oauth_flow.mjs) does discovery,
    registration, PKCE and ``resource``; this test is its browser."""
    node_dir = installed(Path(__file__).parents[1] / "mcp" / "node", "Node.js and npm are needed for the TypeScript MCP client")
    server = await running()
    other = await add_connection(server["app"], server["workspace"]["workspace_id"], "acme", credentials={"api_key": "secret-2"})
    calls = [
        ["acme__create_item", {"name": "from typescript"}],
        ["acme__proxy", {"method": "GET", "path": "/items/it_1"}],
        [f"acme_{other[:8]}__get_item", {"id": "it_1"}],
    ]
    env = {**os.environ, "MCP_URL": server["base"] + "/mcp", "MCP_CALLBACK": CALLBACK, "MCP_CALLS": json.dumps(calls)}
    process = await asyncio.create_subprocess_exec(
        shutil.which("node"),
        str(node_dir / "oauth_flow.mjs"),
        env=env,
        cwd=node_dir,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        line = await asyncio.wait_for(process.stdout.readline(), 60)
        assert line, (await process.stderr.read()).decode()[-3000:]
        browser = Browser(server["email"], server["connection"])
        await browser.open(json.loads(line)["authorize"])
        process.stdin.write(f"{CALLBACK}?code={browser.result.code}&state={browser.result.state or ''}\n".encode())
        await process.stdin.drain()
        out, err = await asyncio.wait_for(process.communicate(), 120)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err.decode()[-3000:]
    seen = json.loads(out.decode().strip().splitlines()[-1])
    assert any("TypeScript agent" in page for page in browser.pages)
    for round_ in (seen["first"], seen["second"]):
        assert round_["tools"] == ["acme__create_item", "acme__get_item", "acme__proxy"], round_
        created, proxied, refused = round_["results"]
        assert not created["isError"] and created["structuredContent"]["name"] == "from typescript"
        assert not proxied["isError"] and proxied["structuredContent"]["body"] == {"id": "it_1", "name": "first"}
        assert refused["isError"] and "Unknown tool" in refused["text"]
    tokens = seen["refreshTokens"]
    assert len(tokens) == 2 and tokens[0] != tokens[1]  # refreshed, and the refresh token rotated
    assert {request.headers["Authorization"] for request in acme.requests} == {"Bearer secret-1"}
