"""Proxied streams (issue 12): a download or upload longer than the plain-call budget goes through
whole; one that goes quiet for longer than ``[outbound] stream_idle_seconds`` is cut."""

from __future__ import annotations

import asyncio
import hashlib
import time

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from patchbay import hookimpl
from patchbay.core.plugins.provider import Provider
from patchbay.core.settings import OutboundSettings
from patchbay.core.testing import create_workspace_with_key

CHUNK = b"x" * 1024


class SlowHostPack:
    @hookimpl
    def register_providers(self):
        return [
            Provider(name="slowhost", display_name="Slow Host", category="other", auth_mode="none", api_base_url="{server}/api", connection_params=("server",))
        ]


@pytest.fixture
async def upstream():
    """A provider that drips a download (``/api/drip?pause=&count=``) and hashes an upload."""

    async def drip(request):
        pause, count = float(request.query["pause"]), int(request.query["count"])
        response = web.StreamResponse()
        await response.prepare(request)
        for _ in range(count):
            await response.write(CHUNK)
            await asyncio.sleep(pause)
        await response.write_eof()
        return response

    async def upload(request):
        return web.json_response({"sha256": hashlib.sha256(await request.read()).hexdigest()})

    app = web.Application()
    app.router.add_get("/api/drip", drip)
    app.router.add_put("/api/upload", upload)
    server = TestServer(app)
    await server.start_server()
    yield str(server.make_url("")).rstrip("/")
    await server.close()


async def _proxy(aiohttp_client, make_app, upstream, **limits):
    app = make_app(plugins=[SlowHostPack()], outbound=OutboundSettings(**limits))
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    connect = await client.post("/connect/v1/providers/slowhost/connect", json={"params": {"server": upstream}}, headers=ws["headers"])
    assert connect.status == 201, await connect.text()
    return client, {**ws["headers"], "x-connection-id": (await connect.json())["connectionId"]}


async def _dripping(chunks: int, pause: float):
    for _ in range(chunks):
        yield CHUNK
        await asyncio.sleep(pause)


@pytest.mark.slow  # about 4 s (setup and call)
async def test_a_stream_longer_than_the_call_budget_is_not_cut(aiohttp_client, make_app, upstream):
    client, headers = await _proxy(aiohttp_client, make_app, upstream, call_timeout_seconds=1, stream_idle_seconds=5)
    started = time.monotonic()
    download = await client.get("/connect/v1/proxy/slowhost/drip?pause=0.2&count=10", headers=headers)
    assert download.status == 200 and await download.read() == CHUNK * 10
    upload = await client.put("/connect/v1/proxy/slowhost/upload", data=_dripping(10, 0.2), headers=headers)
    assert upload.status == 200, await upload.text()
    assert (await upload.json())["sha256"] == hashlib.sha256(CHUNK * 10).hexdigest()
    assert time.monotonic() - started > 2, "both streams outlived the 1 s call budget"


@pytest.mark.slow  # about 1 s (setup and call)
async def test_a_quiet_download_is_cut_after_the_idle_limit(aiohttp_client, make_app, upstream):
    client, headers = await _proxy(aiohttp_client, make_app, upstream, stream_idle_seconds=1)
    started = time.monotonic()
    response = await client.get("/connect/v1/proxy/slowhost/drip?pause=10&count=2", headers=headers)
    with pytest.raises(aiohttp.ClientPayloadError):
        await response.read()
    assert time.monotonic() - started < 8


@pytest.mark.slow  # about 1 s (setup and call)
async def test_a_quiet_upload_is_cut_after_the_idle_limit(aiohttp_client, make_app, upstream):
    client, headers = await _proxy(aiohttp_client, make_app, upstream, stream_idle_seconds=1)
    started = time.monotonic()
    response = await client.put("/connect/v1/proxy/slowhost/upload", data=_dripping(2, 10), headers=headers)
    assert response.status == 408, await response.text()
    assert "stopped arriving" in (await response.json())["message"]
    assert time.monotonic() - started < 8
