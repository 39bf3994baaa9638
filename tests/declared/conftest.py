"""A real local provider API for the declared-actions tests: answers from a route table (status,
JSON body, headers) and records each request with its raw, still percent-encoded path.

It replaces ``patchbay.testing``'s ``fake_provider_api`` here, so ``pack_harness`` aims a real app's
connection client at it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest_asyncio
from aiohttp import web
from multidict import CIMultiDict

from patchbay.testing.servers import LocalServer


@attrs.frozen
class Seen:
    method: str
    raw_path: str  # as sent: percent-encoding kept
    path: str
    query: dict[str, str]
    headers: CIMultiDict
    body: bytes


Answer = tuple[int, Any] | tuple[int, Any, dict[str, str]]


class RecordingAPI(LocalServer):
    """``routes[(method, path)]``: an answer ``(status, body[, headers])`` or a function of the
    :class:`Seen` request returning one; unknown routes answer 404."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Answer | Callable[[Seen], Answer]] = {}
        self.seen: list[Seen] = []
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        super().__init__(app)

    async def _handle(self, request: web.Request) -> web.Response:
        seen = Seen(request.method, request.raw_path.split("?")[0], request.path, dict(request.query), CIMultiDict(request.headers), await request.read())
        self.seen.append(seen)
        answer = self.routes.get((request.method, request.path), (404, {"message": "Not Found"}))
        status, body, *headers = answer(seen) if callable(answer) else answer
        return web.json_response(body, status=status, headers=headers[0] if headers else None)


@pytest_asyncio.fixture
async def fake_provider_api():
    server = await RecordingAPI().start()
    yield server
    await server.close()
