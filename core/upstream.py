"""Keep-alive HTTP/1.1 connections to providers: the client of the proxy's calls.

The proxy's cost per call is mostly HTTP machinery, and a general client (aiohttp's session: its
request and response objects, tracing, cookie and redirect handling, a connector built for every
case) costs several times what one call to an upstream needs. :class:`UpstreamPool` does only
what a provider call needs: one request written as one buffer on a pooled connection, its answer
parsed by ``httptools`` (llhttp, the parser of Node.js), the body handed on as it arrives.

It keeps the outbound rules of :mod:`patchbay.core.outbound`: every address a name resolves to (or a
literal address) is checked with the same rule right before connecting, the https rule and the
private-literal rule are the caller's ``Outbound.check`` (the proxy checks its base URL once per
connection state, and every URL a customizer rewrote), redirects are never followed, nothing is
decompressed, and the call has a total budget or, for a stream, an idle limit
(:class:`aiohttp.ClientTimeout`'s ``total``, ``connect`` and ``sock_read``).

Failures are :class:`UpstreamUnreachable` (an ``aiohttp.ClientConnectionError``), ``TimeoutError``
and :class:`~patchbay.core.outbound.RefusedAddress`, so callers handle them as they handle
aiohttp's. A reused connection that the provider closed while it sat idle is replaced once,
when the request can be sent again.
"""

from __future__ import annotations

import asyncio
import collections
import ipaddress
import re
import socket
import ssl
import time
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import Any

import aiohappyeyeballs
import aiohttp
import httptools
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from patchbay.core.outbound import ALLOW_INSECURE_HINT, AddressRule, RefusedAddress

#: headers every request carries unless the caller gives its own (aiohttp's defaults, so that a
#: provider sees the same request as before)
DEFAULT_HEADERS = (("Accept", "*/*"), ("Accept-Encoding", "gzip, deflate"), ("User-Agent", "patchbay"))
#: set from the request itself
COMPUTED = frozenset({"host", "content-length", "transfer-encoding", "connection"})
#: methods whose request carries a body by definition: sent with ``Content-Length: 0`` when empty
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: unread body bytes held per response before the connection stops reading (back-pressure)
HIGH_WATER = 256 * 1024
IDLE_SECONDS = 15.0
DNS_SECONDS = 60.0
PER_ORIGIN = 50
#: seconds before the next address is tried while one is still connecting (RFC 8305's value)
HAPPY_EYEBALLS_DELAY = 0.25

#: the headers of an answer not parsed yet (read-only, so one is shared)
NO_HEADERS: CIMultiDictProxy[str] = CIMultiDictProxy(CIMultiDict())

#: one ``getaddrinfo`` answer: family, type, protocol, canonical name, socket address
AddressInfo = tuple[int, int, int, str, tuple]


class UpstreamUnreachable(aiohttp.ClientConnectionError):
    """The connection failed, or closed before the answer was complete."""


class BadHeader(ValueError):
    """A header name or value that would change the request's framing (CR, LF or NUL)."""


#: what no header name or value may hold: it would end the header or the request early
_FRAMING = re.compile(r"[\r\n\0]")


def _header_line(name: str, value: str) -> str:
    # CR, LF and NUL are not printable: text that is all printable holds none (the usual case,
    # checked without the expression)
    framed = not (name.isprintable() and value.isprintable()) and (_FRAMING.search(name) or _FRAMING.search(value))
    if framed or not name or ":" in name:
        raise BadHeader(f"header {name!r} has a character it may not have")
    return f"{name}: {value}\r\n"


class Deadlines:
    """Futures to fail with ``TimeoutError`` when their time is up, checked every :data:`TICK`
    seconds: one timer for all the waits of a pool rather than one per wait (a call waits two or
    three times), at the price of firing up to a tick late."""

    TICK = 0.1

    def __init__(self) -> None:
        self._due: dict[asyncio.Future, float] = {}
        self._timer: asyncio.TimerHandle | None = None

    def add(self, future: asyncio.Future, seconds: float | None) -> None:
        """Fail ``future`` after ``seconds`` unless it is done or discarded first (``None``: never)."""
        if seconds is None:
            return
        self._due[future] = time.monotonic() + seconds
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.TICK, self._check)

    def discard(self, future: asyncio.Future) -> None:
        self._due.pop(future, None)

    def _check(self) -> None:
        now = time.monotonic()
        for future in [future for future, due in self._due.items() if due <= now]:
            del self._due[future]
            if not future.done():
                future.set_exception(TimeoutError())
        self._timer = asyncio.get_running_loop().call_later(self.TICK, self._check) if self._due else None

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._due.clear()


class UpstreamResponse:
    """The provider's answer: ``status``, ``reason``, ``headers``, ``content_length``, and the body
    read with :meth:`read` or streamed with ``content.iter_chunked(n)`` / ``content.read(n)``.
    :meth:`release` gives the connection back (or closes it when the body was not read whole)."""

    def __init__(self, connection: _Connection, method: str, deadline: float | None, idle: float | None) -> None:
        self._connection = connection
        self.method = method
        self.status = 0
        self.reason = ""
        self.headers: CIMultiDictProxy[str] = NO_HEADERS
        self.content_length: int | None = None
        self._deadline = deadline
        self._idle = idle
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._complete = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future | None = None
        self._released = False

    @property
    def content(self) -> UpstreamResponse:
        """The body stream (``iter_chunked``, ``read``), as aiohttp's ``response.content``."""
        return self

    # -- fed by the connection ------------------------------------------------------------

    def _feed(self, data: bytes) -> None:
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered > HIGH_WATER:
            self._connection.pause_reading()
        self._wake()

    def _finish(self) -> None:
        self._complete = True
        self._wake()

    def _fail(self, error: BaseException) -> None:
        self._error = error
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- read by the caller ---------------------------------------------------------------

    async def _more(self) -> bool:
        """Wait for body bytes; false at the end of the body."""
        while not self._chunks:
            if self._error is not None:
                raise self._error
            if self._complete:
                return False
            self._waiter = waiter = asyncio.get_running_loop().create_future()
            limit = self._idle
            if self._deadline is not None:
                left = self._deadline - time.monotonic()
                limit = left if limit is None else min(limit, left)
            deadlines = self._connection.pool.deadlines
            deadlines.add(waiter, limit)
            try:
                await waiter
            finally:
                self._waiter = None
                deadlines.discard(waiter)
        return True

    def _take(self, limit: int) -> bytes:
        chunk = self._chunks.popleft()
        if 0 <= limit < len(chunk):
            self._chunks.appendleft(chunk[limit:])
            chunk = chunk[:limit]
        self._buffered -= len(chunk)
        if self._buffered <= HIGH_WATER:
            self._connection.resume_reading()
        return chunk

    async def read(self, limit: int = -1) -> bytes:
        """The body up to its end, or up to ``limit`` bytes when it is longer."""
        parts: list[bytes] = []
        size = 0
        while (limit < 0 or size < limit) and await self._more():
            chunk = self._take(limit - size if limit >= 0 else -1)
            parts.append(chunk)
            size += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def iter_chunked(self, size: int) -> AsyncIterator[bytes]:
        while await self._more():
            yield self._take(size)

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        connection = self._connection
        connection.done_with(reusable=self._complete and not self._chunks and self._error is None)
        connection.pool.end_turn(connection.origin)

    def close(self) -> None:
        self.release()


class _Connection(asyncio.Protocol):
    """One connection to an origin; carries one request at a time."""

    def __init__(self, pool: UpstreamPool, origin: tuple[str, str, int]) -> None:
        self.pool = pool
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.response: UpstreamResponse | None = None
        self.headers_ready: asyncio.Future | None = None
        self.header_list: list[tuple[str, str]] = []
        self.got_bytes = False
        self.keep_alive = True
        self.closed = False
        self.idle_since = 0.0
        self._paused = False
        self._drain: asyncio.Future | None = None
        self._writing_paused = False

    # -- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.response is None:  # bytes nobody asked for: this connection's framing is lost
            self.close()
            return
        self.got_bytes = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._broken(UpstreamUnreachable("the provider switched protocols"))
        except httptools.HttpParserError as error:
            self._broken(UpstreamUnreachable(f"the provider's answer is not valid HTTP: {error}"))

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost finishes or fails the answer

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        response = self.response
        ready = self.headers_ready
        if ready is not None and not ready.done():
            ready.set_exception(UpstreamUnreachable("the provider closed the connection before answering"))
        elif response is not None and not response._complete:
            if self._ends_at_close():
                response._finish()
            else:
                response._fail(UpstreamUnreachable("the provider closed the connection before the answer's end"))
        if self._drain is not None and not self._drain.done():
            self._drain.set_exception(UpstreamUnreachable("the provider closed the connection"))
        self.pool.forget(self)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    # -- httptools callbacks --------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.header_list = []

    def on_status(self, status: bytes) -> None:
        if self.response is not None and not self.response._complete:
            self.response.reason = status.decode("latin-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.header_list.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        response = self.response
        if response is None or response._complete:  # a second answer to one request
            self.keep_alive = False
            return
        if 100 <= status < 200:
            return  # an interim answer (100 Continue, 103 Early Hints): the final one follows
        response.status = status
        response.headers = CIMultiDictProxy(CIMultiDict(self.header_list))
        length = response.headers.get("Content-Length")
        response.content_length = int(length) if length is not None and length.isdigit() else None
        self.keep_alive = self.parser.should_keep_alive()
        if response.method == "HEAD":
            # httptools cannot be told that this answer has no body: the connection is not reused
            self.keep_alive = False
            response._finish()
        if self.headers_ready is not None and not self.headers_ready.done():
            self.headers_ready.set_result(None)

    def on_body(self, body: bytes) -> None:
        if self.response is not None and not self.response._complete:
            self.response._feed(body)

    def on_message_complete(self) -> None:
        if self.response is not None and self.response.status:
            self.response._finish()

    # -- used by the pool and the response ------------------------------------------------

    def _ends_at_close(self) -> bool:
        """An answer without a length that is not chunked ends when the connection closes."""
        response = self.response
        if response is None or not response.status:
            return False
        headers = response.headers
        return "Content-Length" not in headers and "chunked" not in headers.get("Transfer-Encoding", "").lower()

    def _broken(self, error: BaseException) -> None:
        if self.headers_ready is not None and not self.headers_ready.done():
            self.headers_ready.set_exception(error)
        elif self.response is not None:
            self.response._fail(error)
        self.close()

    def pause_reading(self) -> None:
        if not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self._paused and self.transport is not None and not self.closed:
            self._paused = False
            self.transport.resume_reading()

    async def drain(self) -> None:
        if self._writing_paused and not self.closed:
            self._drain = asyncio.get_running_loop().create_future()
            try:
                await self._drain
            finally:
                self._drain = None

    def done_with(self, *, reusable: bool) -> None:
        self.response = None
        self.headers_ready = None
        if reusable and self.keep_alive and not self.closed:
            self.resume_reading()
            self.pool.put_back(self)
        else:
            self.close()
            self.pool.forget(self)

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.close()


class UpstreamPool:
    """Connections per origin (scheme, host, port), at most :data:`PER_ORIGIN` busy at once (the
    others wait), idle ones closed after :data:`IDLE_SECONDS`. ``address_allowed`` decides every
    address before connecting; ``ssl_context`` replaces the system's trust store."""

    def __init__(self, *, address_allowed: AddressRule, ssl_context: ssl.SSLContext | None = None) -> None:
        self._address_allowed = address_allowed
        self._ssl = ssl_context or ssl.create_default_context()
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._busy: dict[tuple[str, str, int], int] = {}
        self._waiting: dict[tuple[str, str, int], collections.deque[asyncio.Future]] = {}
        self._connections: set[_Connection] = set()
        self._dns: dict[tuple[str, int], tuple[float, list[AddressInfo]]] = {}
        self.deadlines = Deadlines()
        self._swept = time.monotonic()

    async def request(
        self,
        method: str,
        url: str | URL,
        *,
        headers: Mapping[str, str] | None = None,
        body: bytes | AsyncIterable[bytes] | None = None,
        timeout: aiohttp.ClientTimeout,
    ) -> UpstreamResponse:
        """Send one request and answer the response once its headers are in; the caller reads the
        body and must :meth:`~UpstreamResponse.release` it."""
        url = url if isinstance(url, URL) else URL(url)
        if url.scheme not in ("http", "https") or not url.host:
            raise UpstreamUnreachable(f"{url} is not an absolute http(s) URL")
        head = self._head(method, url, headers, body)
        deadline = time.monotonic() + timeout.total if timeout.total else None
        origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        if time.monotonic() - self._swept > IDLE_SECONDS:
            self._close_idle()
        await self._take_turn(origin, deadline)
        try:
            connection = self._idle_connection(origin)
            if connection is not None:
                try:
                    return await self._exchange(connection, method, head, body, deadline, timeout.sock_read)
                except UpstreamUnreachable:
                    # the provider closed the idle connection as it was reused: once more on a new
                    # one, when not a byte came back and the body can be sent again
                    if connection.got_bytes or not isinstance(body, bytes | None):
                        raise
            connection = await self._connect(origin, timeout, deadline)
            return await self._exchange(connection, method, head, body, deadline, timeout.sock_read)
        except BaseException:
            self.end_turn(origin)
            raise

    def _head(self, method: str, url: URL, headers: Mapping[str, str] | None, body: Any) -> bytes:
        lines = [f"{method} {url.raw_path_qs} HTTP/1.1\r\nHost: {url.host_port_subcomponent}\r\n"]
        given = set()
        for name, value in (headers or {}).items():
            lower = name.lower()
            if lower in COMPUTED:
                continue
            given.add(lower)
            lines.append(_header_line(name, value))
        for name, value in DEFAULT_HEADERS:
            if name.lower() not in given:
                lines.append(f"{name}: {value}\r\n")
        if isinstance(body, bytes):
            lines.append(f"Content-Length: {len(body)}\r\n")
        elif body is None:
            if method in BODY_METHODS:
                lines.append("Content-Length: 0\r\n")
        else:
            length = next((value for name, value in (headers or {}).items() if name.lower() == "content-length"), None)
            lines.append(f"Content-Length: {int(length)}\r\n" if length is not None else "Transfer-Encoding: chunked\r\n")
        lines.append("\r\n")
        return "".join(lines).encode()  # UTF-8, as aiohttp writes header values

    async def _exchange(self, connection: _Connection, method: str, head: bytes, body: Any, deadline: float | None, idle: float | None) -> UpstreamResponse:
        loop = asyncio.get_running_loop()
        response = UpstreamResponse(connection, method, deadline, idle)
        connection.response = response
        connection.headers_ready = ready = loop.create_future()
        connection.got_bytes = False
        transport = connection.transport
        assert transport is not None
        try:
            if body is None or isinstance(body, bytes):
                transport.write(head + body if body else head)
            else:
                transport.write(head)
                await self._send_stream(connection, body, chunked=b"Transfer-Encoding: chunked" in head)
            limit = idle
            if deadline is not None:
                left = deadline - time.monotonic()
                limit = left if limit is None else min(limit, left)
            self.deadlines.add(ready, limit)
            try:
                await ready
            finally:
                self.deadlines.discard(ready)
        except BaseException:
            connection.response = None
            connection.close()
            self.forget(connection)
            raise
        return response

    async def _send_stream(self, connection: _Connection, body: AsyncIterable[bytes], *, chunked: bool) -> None:
        transport = connection.transport
        assert transport is not None
        async for chunk in body:
            if connection.closed:
                raise UpstreamUnreachable("the provider closed the connection while the body was sent")
            if chunk:
                transport.write(b"%x\r\n%b\r\n" % (len(chunk), chunk) if chunked else chunk)
                await connection.drain()
        if chunked:
            transport.write(b"0\r\n\r\n")

    # -- connections ----------------------------------------------------------------------

    async def _take_turn(self, origin: tuple[str, str, int], deadline: float | None) -> None:
        """Wait until fewer than :data:`PER_ORIGIN` calls to ``origin`` are under way; the turn is
        held until the response is released (or the request fails)."""
        busy = self._busy.get(origin, 0)
        if busy < PER_ORIGIN:
            self._busy[origin] = busy + 1
            return
        waiter = asyncio.get_running_loop().create_future()
        waiting = self._waiting.setdefault(origin, collections.deque())
        waiting.append(waiter)
        self.deadlines.add(waiter, None if deadline is None else deadline - time.monotonic())
        try:
            await waiter  # end_turn handed its turn over: busy stays as it is
        except BaseException:
            if waiter in waiting:
                waiting.remove(waiter)
            elif not waiter.cancelled() and waiter.exception() is None:
                self.end_turn(origin)  # handed over just as this call gave up: pass it on
            raise
        finally:
            self.deadlines.discard(waiter)

    def end_turn(self, origin: tuple[str, str, int]) -> None:
        waiting = self._waiting.get(origin)
        while waiting:
            waiter = waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._busy[origin] -= 1

    def _idle_connection(self, origin: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if not connection.closed and now - connection.idle_since < IDLE_SECONDS:
                return connection
            connection.close()
        return None

    def _close_idle(self) -> None:
        """Close the connections idle longer than :data:`IDLE_SECONDS`, whatever their origin (an
        origin called once is not asked again); run at most once per that period, by a call."""
        now = self._swept = time.monotonic()
        for origin, idle in list(self._idle.items()):
            for connection in [connection for connection in idle if now - connection.idle_since >= IDLE_SECONDS]:
                idle.remove(connection)
                connection.close()
            if not idle:
                del self._idle[origin]

    def put_back(self, connection: _Connection) -> None:
        connection.idle_since = time.monotonic()
        self._idle.setdefault(connection.origin, []).append(connection)

    def forget(self, connection: _Connection) -> None:
        """The connection is closed or closing: it is not handed out again."""
        self._connections.discard(connection)
        idle = self._idle.get(connection.origin)
        if idle and connection in idle:
            idle.remove(connection)

    async def _connect(self, origin: tuple[str, str, int], timeout: aiohttp.ClientTimeout, deadline: float | None) -> _Connection:
        """A new connection to ``origin``: its allowed addresses tried as Happy Eyeballs does (RFC
        8305, the next one started after :data:`HAPPY_EYEBALLS_DELAY`, address families
        interleaved), as aiohttp's connector does, so an unreachable IPv6 route costs a quarter of
        a second, not the connect timeout; then TLS for https."""
        scheme, host, port = origin
        limit = timeout.connect
        if deadline is not None:
            left = deadline - time.monotonic()
            limit = left if limit is None else min(limit, left)
        async with asyncio.timeout(limit):
            addresses = await self._addresses(host, port)
            try:
                sock = await aiohappyeyeballs.start_connection(addresses, happy_eyeballs_delay=HAPPY_EYEBALLS_DELAY, interleave=1)
            except OSError as error:
                raise UpstreamUnreachable(f"cannot connect to {host}:{port}: {error}") from None
            try:
                _, connection = await asyncio.get_running_loop().create_connection(
                    lambda: _Connection(self, origin),
                    sock=sock,
                    ssl=self._ssl if scheme == "https" else None,
                    server_hostname=host if scheme == "https" else None,
                )
            except OSError as error:  # TLS refused (a certificate that does not verify, ...)
                sock.close()
                raise UpstreamUnreachable(f"cannot connect to {host}:{port}: {error}") from None
        self._connections.add(connection)
        return connection

    async def _addresses(self, host: str, port: int) -> list[AddressInfo]:
        """The addresses of ``host`` the rule allows (a literal is its own address), as
        ``getaddrinfo`` gives them, from a cache of :data:`DNS_SECONDS`; every one is checked again
        on each connect."""
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            cached = self._dns.get((host, port))
            if cached is not None and time.monotonic() - cached[0] < DNS_SECONDS:
                found = cached[1]
            else:
                try:
                    found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
                except OSError as error:
                    raise UpstreamUnreachable(f"cannot resolve {host}: {error}") from None
                if len(self._dns) > 1000:
                    self._dns.clear()
                self._dns[(host, port)] = (time.monotonic(), found)
        else:
            family = socket.AF_INET6 if literal.version == 6 else socket.AF_INET
            found = [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (host, port, 0, 0) if literal.version == 6 else (host, port))]
        allowed = [info for info in found if self._address_allowed(info[4][0])]
        if not allowed:
            raise RefusedAddress(f"{host} does not resolve to a public address: {ALLOW_INSECURE_HINT}")
        return allowed

    async def close(self) -> None:
        for connection in list(self._connections):
            connection.close()
        self._connections.clear()
        self._idle.clear()
        self.deadlines.close()
