"""Integrations set through one ``patchbay serve`` process are used by another on the same
database within the version window (a second), without a restart: the proxy's API base URL, the
OAuth app and scopes of an authorization URL, and the webhook secret inbound webhooks are verified
with."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from aiohttp import web

from patchbay.core.connections.store import save_connection
from patchbay.core.services import build_services
from patchbay.core.settings import load_settings
from patchbay.core.testing import create_workspace_with_key
from tests.integrations.conftest import OPERATOR_KEY, SECRET_KEY

OPERATOR = {"x-api-key": OPERATOR_KEY}


def upstream(name: str) -> web.Application:
    """A stand-in for the provider's API that says which one it is and what it was sent."""

    async def answer(request: web.Request) -> web.Response:
        return web.json_response({"server": name, "path": request.path, "authorization": request.headers.get("Authorization")})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    return app


async def _seed(database_url: str, data_dir) -> dict:
    """A workspace, its API key and an airtable-pat connection, written by this test process."""
    settings = load_settings({}, {"PATCHBAY_SECRET_KEY": SECRET_KEY, "PATCHBAY_DATA_DIR": str(data_dir), "PATCHBAY_DATABASE_URL": database_url})
    services = build_services(settings)
    async with services.running(migrate=False):
        workspace = await create_workspace_with_key(services, plan="enterprise")
        async with services.db.transaction(tenant=workspace["workspace_id"]) as session:
            await save_connection(services, session, workspace_id=workspace["workspace_id"], provider="airtable-pat", credentials={"api_key": "pat-123"})
    return workspace


async def within_window(read, wanted, timeout: float = 10.0):
    """What ``read()`` answers once ``wanted`` holds of it (B trusts its version read for a second);
    the last answer after ``timeout``."""
    deadline = asyncio.get_running_loop().time() + timeout
    answer = await read()
    while not wanted(answer) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.1)
        answer = await read()
    return answer


def _signed(secret: str, body: bytes) -> dict[str, str]:
    return {"x-hub-signature-256": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest(), "Content-Type": "application/json"}


@pytest.mark.slow  # two `patchbay serve` processes of its own
async def test_a_change_through_one_process_is_used_by_another_without_restart(tmp_path, serve_process, aiohttp_server):
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    first, second = await aiohttp_server(upstream("first")), await aiohttp_server(upstream("second"))
    a = serve_process("a", database_url)
    await asyncio.to_thread(a.wait_ready)  # A migrates the database before B starts
    b = serve_process("b", database_url)
    await asyncio.to_thread(b.wait_ready)
    workspace = await _seed(database_url, tmp_path / "seed")
    key = workspace["headers"]

    async with aiohttp.ClientSession() as http:

        async def set_on_a(path: str, body: dict, headers=OPERATOR) -> dict:
            async with http.patch(f"{a.url}/connect/v1/{path}", json=body, headers=headers) as response:
                answer = await response.json()
                assert response.status == 200, answer
                return answer

        async def proxy_on_b() -> dict:
            async with http.get(f"{b.url}/connect/v1/proxy/airtable-pat/v0/meta", headers=key) as response:
                assert response.status == 200, await response.text()
                return await response.json()

        # the proxy's base URL: B has read (and cached) the first value before the change
        await set_on_a("deployment/integrations/airtable-pat", {"apiBaseUrl": str(first.make_url("/api"))})
        answer = await within_window(proxy_on_b, lambda a: a["server"] == "first")
        assert answer == {"server": "first", "path": "/api/v0/meta", "authorization": "Bearer pat-123"}
        await set_on_a("deployment/integrations/airtable-pat", {"apiBaseUrl": str(second.make_url("/v2"))})
        assert (await within_window(proxy_on_b, lambda a: a["server"] == "second"))["server"] == "second", "B uses the new base URL"
        await set_on_a("integrations/airtable-pat", {"apiBaseUrl": str(first.make_url("/own"))}, headers=key)
        assert (await within_window(proxy_on_b, lambda a: a["path"] == "/own/v0/meta"))["path"] == "/own/v0/meta", "the workspace's own wins"

        # the OAuth app and scopes of an authorization URL
        async def authorize_on_b() -> tuple[int, dict]:
            async with http.get(f"{b.url}/auth/github/login", headers=key, allow_redirects=False) as response:
                if response.status != 302:
                    return response.status, await response.json()
                return 302, parse_qs(urlsplit(response.headers["Location"]).query)

        status, answer = await authorize_on_b()
        assert status == 400 and "No OAuth app" in answer["message"]
        await set_on_a("deployment/integrations/github", {"clientId": "app-one", "clientSecret": "secret-one", "scopes": ["repo", "read:user"]})
        status, query = await within_window(authorize_on_b, lambda a: a[0] == 302)
        assert status == 302 and query["client_id"] == ["app-one"] and query["scope"] == ["repo read:user"]
        await set_on_a("deployment/integrations/github", {"clientId": "app-two", "clientSecret": "secret-two"})
        status, query = await within_window(authorize_on_b, lambda a: a[0] == 302 and a[1]["client_id"] == ["app-two"])
        assert query["client_id"] == ["app-two"]

        # the webhook secret inbound webhooks are verified with
        body = json.dumps({"object": "page", "entry": [{"id": "1", "changes": []}]}).encode()

        def webhook_on_b(secret: str):
            async def post() -> int:
                async with http.post(f"{b.url}/webhook/facebook", data=body, headers=_signed(secret, body)) as response:
                    return response.status

            return post

        await set_on_a("deployment/integrations/facebook", {"webhookSecret": "hook-one"})
        assert await within_window(webhook_on_b("hook-one"), lambda status: status == 200) == 200
        await set_on_a("deployment/integrations/facebook", {"webhookSecret": "hook-two"})
        assert await within_window(webhook_on_b("hook-two"), lambda status: status == 200) == 200
        assert await webhook_on_b("hook-one")() == 401, "the old secret no longer verifies on B"

        # deleted through A: B falls back to the file (none here)
        async with http.delete(f"{a.url}/connect/v1/deployment/integrations/github", headers=OPERATOR) as response:
            assert response.status == 200
        status, answer = await within_window(authorize_on_b, lambda a: a[0] == 400)
        assert status == 400 and "No OAuth app" in answer["message"]
