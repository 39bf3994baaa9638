"""Local HTTP servers for tests: any aiohttp app on 127.0.0.1, and a receiver recording what it is sent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web


class LocalServer:
    """An aiohttp app on 127.0.0.1 and a free port."""

    def __init__(self, app: web.Application) -> None:
        self.app = app
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> LocalServer:
        self.runner = web.AppRunner(self.app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


class Receiver(LocalServer):
    """Records every POST (raw body, headers). ``statuses`` answers in turn (the last one repeats);
    ``headers_for(n)`` adds response headers to the n-th answer (from 1)."""

    def __init__(self, statuses: list[int] | None = None, headers_for: Callable[[int], dict[str, str]] | None = None) -> None:
        self.statuses = list(statuses or [200])
        self.headers_for = headers_for or (lambda _n: {})
        self.requests: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        super().__init__(app)

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.requests.append({"body": body, "headers": dict(request.headers), "path": request.path, "at": asyncio.get_running_loop().time()})
        self.arrived.set()
        n = len(self.requests)
        status = self.statuses[min(n, len(self.statuses)) - 1]
        return web.Response(status=status, text=f"answer {n}", headers=self.headers_for(n))

    async def wait_for(self, count: int, timeout: float = 10.0) -> None:
        async def enough() -> None:
            while len(self.requests) < count:
                self.arrived.clear()
                await self.arrived.wait()

        await asyncio.wait_for(enough(), timeout)
