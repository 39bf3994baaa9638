"""MCP tool calls per second: one provider call made as an MCP tool call through ``/mcp`` (the
``{provider}__proxy`` tool, with the official ``mcp`` Python client) against the same call
through the connect API's proxy (``POST /connect/v1/proxy/bench``), in one run, against one local
upstream; prints both rates and their ratio.

    python benchmarks/mcp_tools.py [--seconds 10] [--concurrency 20] [--rounds 3] [--database-url postgresql+asyncpg://...]

Processes: the upstream (a small aiohttp JSON API) and patchbay (built as ``serve`` builds it, job
workers on, access log off), each in its own process; the load comes from this process: one session
of the official ``mcp`` client checks the tool call first; then ``--concurrency`` keep-alive aiohttp
clients send ``tools/call`` to ``/mcp`` (as the SDK's client sends it after the handshake; the
server is stateless) and as many send the proxy call, so that the load generator costs the same on
both sides and the rates compare the servers. Both paths do everything a real call does:
authentication (the MCP access token and its grant; the API key), the connection lookup and
credential injection, the per-connection rate limit, the audit rows. The MCP path adds the JSON-RPC
envelope, the SSE answer, the tool list derived from the grant and the per-token limit. Targets
alternate each round; the ratio is the median of the per-round ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp
import httpx2
from _common import serve, server_app, start_process
from aiohttp import web

ITEM_PATH = "/items/1"


def _upstream(out) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"id": request.match_info["id"], "name": "Ada Lovelace", "email": "ada@example.com"})

    app = web.Application()
    app.router.add_get("/v1/items/{id}", handler)
    asyncio.run(serve(app, out, access_log=None))


def _patchbay(upstream: str, data_dir: str, database_url: str | None, out) -> None:
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    from patchbay import Provider, hookimpl
    from patchbay.core.appkeys import SERVICES
    from patchbay.core.connections.service import connect_with_api_key
    from patchbay.core.mcp.access import mint_access_token
    from patchbay.core.mcp.grants import create_grant
    from patchbay.core.settings import load_settings
    from patchbay.core.testing import create_workspace_with_key

    class BenchPack:
        @hookimpl
        def register_providers(self):
            return [Provider(name="bench", display_name="Bench", category="other", auth_mode="api_key", api_base_url=f"{upstream}/v1")]

    environ = {"PATCHBAY_SECRET_KEY": "bench-secret", "PATCHBAY_DATA_DIR": data_dir, "PATCHBAY_SCHEDULER": "false", "PATCHBAY_ALLOW_INSECURE_TARGETS": "true"}
    if database_url:
        environ["PATCHBAY_DATABASE_URL"] = database_url
    settings = load_settings({}, environ)
    settings.rate_limits = {**settings.rate_limits, "connect_api": "10000000/minute", "proxy": "10000000/minute"}
    settings.mcp.tool_calls_per_token = "10000000/minute"
    settings.mcp.tool_calls_per_connection = "10000000/minute"  # one connection takes every call
    app = server_app(settings, [BenchPack()])

    async def info(app: web.Application) -> dict[str, str]:
        services = app[SERVICES]
        workspace = await create_workspace_with_key(app, plan="enterprise")
        connection = await connect_with_api_key(
            services, workspace_id=workspace["workspace_id"], provider_name="bench", credentials={"apiKey": "k"}, validate=False
        )
        grant = await create_grant(services, workspace_id=workspace["workspace_id"], user_id=None, client_id="bench", connection_ids=[connection.id])
        token = await mint_access_token(services, grant, lifetime=3600)
        return {"api_key": workspace["api_key"], "connection_id": connection.id, "token": token}

    asyncio.run(serve(app, out, info, access_log=None))


def _start(target, *args):
    return start_process(target, *args)


async def _rate(worker, concurrency: int, seconds: float) -> float:
    """Calls per second of ``concurrency`` copies of ``worker(until)`` (each returns its count)."""
    until = time.monotonic() + seconds
    counts = await asyncio.gather(*(worker(until) for _ in range(concurrency)))
    return sum(counts) / seconds


async def main(args: argparse.Namespace) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    upstream, upstream_port = _start(_upstream)
    with tempfile.TemporaryDirectory() as data_dir:
        patchbay, (port, info) = _start(_patchbay, f"http://127.0.0.1:{upstream_port}", data_dir, args.database_url)
        base = f"http://127.0.0.1:{port}"
        arguments = {"method": "GET", "path": ITEM_PATH}

        async def check_with_the_sdk() -> None:
            """One initialized session of the official client calls the tool once: the server
            speaks the protocol the raw requests below then repeat."""
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {info['token']}"}, timeout=30) as http:
                async with streamable_http_client(f"{base}/mcp", http_client=http) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    result = await session.call_tool("bench__proxy", arguments)
                    assert not result.is_error and result.structured_content["status"] == 200, result.content

        call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "bench__proxy", "arguments": arguments}})
        mcp_headers = {
            "Authorization": f"Bearer {info['token']}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2025-11-25",
        }

        async def via_mcp(until: float) -> int:
            """``tools/call`` as the SDK's client sends it after the handshake (the stateless server
            needs no session), read as the SSE answer it is: the load generator stays as light as
            the proxy's, so the rates compare the servers."""
            count = 0
            async with aiohttp.ClientSession() as http:
                while time.monotonic() < until:
                    async with http.post(f"{base}/mcp", data=call, headers=mcp_headers) as response:
                        text = await response.text()
                    answer = json.loads(next(line[5:] for line in text.splitlines() if line.startswith("data:")))
                    assert response.status == 200 and not answer["result"]["isError"], text
                    count += 1
            return count

        async def via_proxy(until: float) -> int:
            count = 0
            headers = {"x-api-key": info["api_key"], "x-connection-id": info["connection_id"]}
            async with aiohttp.ClientSession() as http:
                while time.monotonic() < until:
                    async with http.post(f"{base}/connect/v1/proxy/bench", json=arguments, headers=headers) as response:
                        assert response.status == 200, await response.text()
                        await response.read()
                    count += 1
            return count

        try:
            await check_with_the_sdk()
            ratios = []
            for number in range(args.rounds):
                order = [("mcp", via_mcp), ("proxy", via_proxy)]
                rates = {name: await _rate(worker, args.concurrency, args.seconds) for name, worker in (order if number % 2 == 0 else order[::-1])}
                ratios.append(rates["mcp"] / rates["proxy"])
                print(f"round {number + 1}: /mcp {rates['mcp']:.0f} tool calls/s, proxy {rates['proxy']:.0f} calls/s, ratio {ratios[-1]:.2f}", flush=True)
            print(f"median ratio /mcp : proxy = {statistics.median(ratios):.2f} ({args.concurrency} concurrent callers, {args.seconds:g} s a target a round)")
        finally:
            for process in (patchbay, upstream):
                process.terminate()
                process.join(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database-url")
    options = parser.parse_args()
    asyncio.run(main(options))
