"""An aiohttp request served by an ASGI application (the MCP SDK's Streamable HTTP transport), in
the same process and on the same port as every other route.

Only what one HTTP exchange needs of ASGI 3: an ``http`` scope from the request, ``receive``
handing over the body as it arrives (then ``http.disconnect`` once the exchange is over or the
client has gone: aiohttp does not cancel a handler whose client disconnects, so ``receive`` looks
at the connection every ``DISCONNECT_CHECK`` seconds; the SDK's SSE response then ends and the
tool call waiting under it is cancelled), ``send``
turning ``http.response.start`` and each ``http.response.body`` into an aiohttp
``StreamResponse``, written as it comes (an SSE stream reaches the client event by event).
Lifespan events are not sent: the SDK's session manager is opened with the services instead.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from aiohttp import web

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

CHUNK = 64 * 1024
DISCONNECT_CHECK = 1.0


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def scope_of(request: web.Request, extra: dict[str, Any] | None = None) -> Scope:
    """The ASGI ``http`` scope of ``request`` (``extra`` keys added, for what the app reads)."""
    peer = request.transport.get_extra_info("peername") if request.transport else None
    sock = request.transport.get_extra_info("sockname") if request.transport else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        "headers": [(name.lower().encode("latin-1"), value.encode("latin-1", "surrogateescape")) for name, value in request.headers.items()],
        "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
        "server": tuple(sock[:2]) if isinstance(sock, tuple) else None,
        "state": {},
        **(extra or {}),
    }


async def serve_asgi(request: web.Request, app: ASGIApp, extra_scope: dict[str, Any] | None = None) -> web.StreamResponse:
    """Answer ``request`` with what ``app`` sends."""
    over = asyncio.Event()
    body_done = False
    response: web.StreamResponse | None = None

    async def receive() -> Message:
        nonlocal body_done
        if not body_done:
            chunk = await request.content.read(CHUNK)
            body_done = request.content.at_eof()
            return {"type": "http.request", "body": chunk, "more_body": not body_done}
        while not over.is_set() and not _gone(request):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(over.wait(), DISCONNECT_CHECK)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal response
        kind = message["type"]
        if kind == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", ()):
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
        elif kind == "http.response.body" and not _gone(request):  # nobody to write to otherwise
            if response is None:
                raise RuntimeError("ASGI app sent a body before its start")
            if not response.prepared:
                await response.prepare(request)
            body = message.get("body", b"")
            if body:
                await response.write(body)
            if not message.get("more_body", False):
                await response.write_eof()

    try:
        await app(scope_of(request, extra_scope), receive, send)
    finally:
        over.set()
    if response is None:
        raise RuntimeError("ASGI app answered nothing")
    if not response.prepared:
        await response.prepare(request)
        await response.write_eof()
    return response
