"""A fake provider API driven by a route table, recording every request it is sent."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
from aiohttp import web
from multidict import CIMultiDict

from patchbay.testing.servers import LocalServer


@attrs.frozen
class RecordedRequest:
    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]  # case-insensitive
    body: bytes


class FakeProviderAPI(LocalServer):
    """Answers ``routes[(method, path)]`` (a ``(status, json_body)`` pair, or a function of the
    :class:`RecordedRequest` returning one, e.g. to page on a query parameter), else ``default``;
    ``answer_all(status, body)`` makes every route answer the same (e.g. 401 for a refused
    credential). Every request lands in ``requests``."""

    def __init__(
        self,
        routes: Mapping[tuple[str, str], tuple[int, Any] | Callable[[RecordedRequest], tuple[int, Any]]] | None = None,
        *,
        default: tuple[int, Any] = (200, {}),
    ) -> None:
        self.routes: dict[tuple[str, str], Any] = dict(routes or {})
        self.default = default
        self.forced: tuple[int, Any] | None = None
        self.requests: list[RecordedRequest] = []
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        super().__init__(app)

    def answer_all(self, status: int, body: Any = None) -> None:
        self.forced = (status, body if body is not None else {})

    async def _handle(self, request: web.Request) -> web.Response:
        recorded = RecordedRequest(request.method, request.path, dict(request.query), CIMultiDict(request.headers), await request.read())
        self.requests.append(recorded)
        answer = self.forced or self.routes.get((request.method, request.path), self.default)
        status, body = answer(recorded) if callable(answer) else answer
        return web.json_response(body, status=status)
