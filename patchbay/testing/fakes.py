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
    path: str  # percent-decoded
    query: Mapping[str, str]
    headers: Mapping[str, str]  # case-insensitive
    body: bytes
    raw_path: str = ""  # as sent, percent-encoding kept


#: ``(status, json_body)`` or ``(status, json_body, headers)``
Answer = tuple[int, Any] | tuple[int, Any, Mapping[str, str]]


class FakeProviderAPI(LocalServer):
    """Answers ``routes[(method, path)]`` (an :data:`Answer`: ``(status, json_body)``, optionally
    with response headers as a third item; or a function of the :class:`RecordedRequest` returning
    one, e.g. to page on a query parameter), else ``default`` (an answer or such a function);
    ``answer_all(status, body)`` makes every route answer the same (e.g. 401 for a refused
    credential). Every request lands in ``requests``."""

    def __init__(
        self,
        routes: Mapping[tuple[str, str], Answer | Callable[[RecordedRequest], Answer]] | None = None,
        *,
        default: Answer | Callable[[RecordedRequest], Answer] = (200, {}),
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
        raw_path = request.raw_path.split("?")[0]
        recorded = RecordedRequest(request.method, request.path, dict(request.query), CIMultiDict(request.headers), await request.read(), raw_path)
        self.requests.append(recorded)
        answer = self.forced or self.routes.get((request.method, request.path), self.default)
        status, body, *headers = answer(recorded) if callable(answer) else answer
        return web.json_response(body, status=status, headers=headers[0] if headers else None)
