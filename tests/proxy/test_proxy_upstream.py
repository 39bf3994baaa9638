"""The proxy's connections to providers (core/upstream.py) against a provider written at the byte
level: connections reused, one closed while idle replaced, answers framed by length, by chunks or by
the connection's end, interim answers skipped, a cut answer reported, a header that would split the
request refused, at most ``PER_ORIGIN`` calls at once to one origin."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time

import aiohttp
import pytest

from patchbay import hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.client import open_client
from patchbay.core.errors import UpstreamFailed
from patchbay.core.plugins.provider import Provider
from patchbay.core.settings import OutboundSettings
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.upstream import PER_ORIGIN, UpstreamPool


class RawHostPack:
    @hookimpl
    def register_providers(self):
        return [
            Provider(name="rawhost", display_name="Raw Host", category="other", auth_mode="none", api_base_url="{server}/api", connection_params=("server",))
        ]


class RawProvider:
    """A TCP server that answers each request with ``answer(request_head, connection_number)``:
    bytes to write, or ``None`` to close the connection without answering. Records every request
    head and how many connections were opened."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number = self.connections
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.requests.append(head)
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        await reader.readexactly(int(line.split(b":", 1)[1]))
                reply = self.answer(head, number)
                if asyncio.iscoroutine(reply):
                    reply = await reply
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if b"connection: close" in reply.lower():
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def __aenter__(self) -> RawProvider:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc) -> None:
        self.server.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"


def ok(body: bytes = b'{"ok":true}', *extra: str) -> bytes:
    headers = "".join(f"{line}\r\n" for line in extra)
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%b\r\n%b" % (len(body), headers.encode(), body)


async def _proxy(aiohttp_client, make_app, provider: RawProvider, **limits):
    app = make_app(plugins=[RawHostPack()], outbound=OutboundSettings(**limits))
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    connect = await client.post("/connect/v1/providers/rawhost/connect", json={"params": {"server": provider.url}}, headers=ws["headers"])
    assert connect.status == 201, await connect.text()
    return client, {**ws["headers"], "x-connection-id": (await connect.json())["connectionId"]}


async def test_calls_one_after_another_use_one_connection(aiohttp_client, make_app):
    async with RawProvider(lambda head, number: ok()) as provider:
        client, headers = await _proxy(aiohttp_client, make_app, provider)
        for _ in range(5):
            response = await client.get("/connect/v1/proxy/rawhost/items", headers=headers)
            assert response.status == 200 and await response.json() == {"ok": True}
        assert len(provider.requests) == 5 and provider.connections == 1


async def test_a_connection_the_provider_closed_while_idle_is_replaced(aiohttp_client, make_app):
    # the first connection takes one request, then closes on the next without a byte of answer:
    # what a provider does when its keep-alive timeout ends as a call is sent
    seen: dict[int, int] = {}

    def answer(head, number):
        seen[number] = seen.get(number, 0) + 1
        return None if number == 1 and seen[number] == 2 else ok()

    async with RawProvider(answer) as provider:
        client, headers = await _proxy(aiohttp_client, make_app, provider)
        first = await client.get("/connect/v1/proxy/rawhost/items", headers=headers)
        assert first.status == 200
        second = await client.get("/connect/v1/proxy/rawhost/items", headers=headers)
        assert second.status == 200, await second.text()
        assert provider.connections == 2


async def test_an_answer_nobody_asked_for_is_not_taken_for_the_next_one(aiohttp_client, make_app):
    def answer(head, number):
        return ok(b'{"n":%d}' % number) + (ok(b'{"unasked":1}') if number == 1 else b"")

    async with RawProvider(answer) as provider:
        client, headers = await _proxy(aiohttp_client, make_app, provider)
        answers = [await (await client.get("/connect/v1/proxy/rawhost/items", headers=headers)).json() for _ in range(3)]
        assert answers == [{"n": 1}, {"n": 2}, {"n": 2}]


async def test_an_upload_is_not_sent_twice_when_the_connection_fails(aiohttp_client, make_app):
    async with RawProvider(lambda head, number: ok() if b"GET" in head else None) as provider:
        client, headers = await _proxy(aiohttp_client, make_app, provider)
        assert (await client.get("/connect/v1/proxy/rawhost/items", headers=headers)).status == 200

        async def chunks():
            yield b"x" * 10

        response = await client.post("/connect/v1/proxy/rawhost/items", data=chunks(), headers={**headers, "Content-Type": "text/plain"})
        assert response.status == 502, await response.text()
        assert sum(head.startswith(b"POST") for head in provider.requests) == 1


FRAMINGS = {
    # no length: the answer ends when the provider closes, so the next call needs a new connection
    "until-close": (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nhello world", 2),
    "chunked": (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 1),
}


@pytest.mark.parametrize("framing", FRAMINGS)
async def test_an_answer_framed_by_chunks_or_by_the_end_of_the_connection_is_passed_on_whole(aiohttp_client, make_app, framing):
    answer, connections = FRAMINGS[framing]
    async with RawProvider(lambda head, number: answer) as provider:
        client, headers = await _proxy(aiohttp_client, make_app, provider)
        for _ in range(2):
            response = await client.get("/connect/v1/proxy/rawhost/items", headers=headers)
            assert response.status == 200 and await response.text() == "hello world"
        assert provider.connections == connections


async def test_interim_answers_are_skipped(aiohttp_client, make_app):
    early = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
    async with RawProvider(lambda head, number: early + ok(b'{"final":1}')) as provider:
        client, headers = await _proxy(aiohttp_client, make_app, provider)
        response = await client.get("/connect/v1/proxy/rawhost/items", headers=headers)
        assert response.status == 200 and await response.json() == {"final": 1}
        assert "Link" not in response.headers


async def test_a_head_answer_has_no_body_and_the_next_call_works(aiohttp_client, make_app):
    async with RawProvider(lambda head, number: ok(b'{"body":"only for GET"}')) as provider:
        client, headers = await _proxy(aiohttp_client, make_app, provider)
        head = await client.head("/connect/v1/proxy/rawhost/items", headers=headers)
        assert head.status == 200
        response = await client.get("/connect/v1/proxy/rawhost/items", headers=headers)
        assert response.status == 200 and await response.json() == {"body": "only for GET"}


@pytest.mark.parametrize("size", [10, 2 * 1024 * 1024], ids=["small", "streamed"])
async def test_an_answer_cut_before_its_length_is_not_passed_on_as_complete(aiohttp_client, make_app, size):
    async def cut(head, number):
        return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%b" % (size + 100, b"x" * size)

    async with RawProvider(cut) as provider:
        client, headers = await _proxy(aiohttp_client, make_app, provider)
        response = await client.get("/connect/v1/proxy/rawhost/items", headers=headers)
        if response.status == 200:  # streamed: the status was sent before the cut, so the connection is cut
            with pytest.raises(aiohttp.ClientPayloadError):
                await response.read()
        else:
            assert response.status == 502, await response.text()
            assert "broke off" in (await response.json())["message"]


async def test_a_provider_that_does_not_answer_is_given_up_after_the_idle_limit(aiohttp_client, make_app):
    async def late(head, number):
        await asyncio.sleep(6)
        return ok()

    async with RawProvider(late) as provider:
        client, headers = await _proxy(aiohttp_client, make_app, provider, stream_idle_seconds=1)
        started = time.monotonic()
        response = await client.get("/connect/v1/proxy/rawhost/items", headers=headers)
        assert response.status == 502 and "unreachable: TimeoutError" in (await response.json())["message"]
        assert 0.9 < time.monotonic() - started < 5


@pytest.mark.parametrize(
    ("name", "value"),
    [("X-Note", "a\r\nX-Injected: yes"), ("X-Note", "a\nX-Injected: yes"), ("X-Note", "a\rX-Injected: yes"), ("X-Note\r\nX-Injected", "yes")],
    ids=["crlf", "lf", "cr", "in-the-name"],
)
async def test_a_header_that_would_split_the_request_is_refused(aiohttp_client, make_app, name, value):
    async with RawProvider(lambda head, number: ok()) as provider:
        client, headers = await _proxy(aiohttp_client, make_app, provider)
        smuggled = {"method": "GET", "path": "/items", "headers": {name: value}}
        response = await client.post("/connect/v1/proxy/rawhost", json=smuggled, headers=headers)
        assert response.status == 400, await response.text()
        assert (await response.json())["message"].startswith("Validation failed")
        assert not any(b"X-Injected" in head for head in provider.requests)


async def test_a_header_value_with_a_tab_or_other_script_is_sent_as_it_is(aiohttp_client, make_app):
    async with RawProvider(lambda head, number: ok()) as provider:
        client, headers = await _proxy(aiohttp_client, make_app, provider)
        envelope = {"method": "GET", "path": "/items", "headers": {"X-Note": "a\tb ü"}}
        response = await client.post("/connect/v1/proxy/rawhost", json=envelope, headers=headers)
        assert response.status == 200, await response.text()
        assert any("X-Note: a\tb ü".encode() in head for head in provider.requests)


async def test_at_most_per_origin_calls_at_once_to_one_origin():
    busy = peak = 0

    async def slow(head, number):
        nonlocal busy, peak
        busy += 1
        peak = max(peak, busy)
        await asyncio.sleep(0.05)
        busy -= 1
        return ok()

    async with RawProvider(slow) as provider:
        pool = UpstreamPool(address_allowed=lambda address: True)
        timeout = aiohttp.ClientTimeout(total=30, connect=10, sock_read=30)

        async def call():
            response = await pool.request("GET", f"{provider.url}/api/items", timeout=timeout)
            try:
                return response.status, await response.read()
            finally:
                response.release()

        answers = await asyncio.gather(*(call() for _ in range(PER_ORIGIN + 20)))
        await pool.close()
    assert answers == [(200, b'{"ok":true}')] * (PER_ORIGIN + 20)
    assert peak == PER_ORIGIN and provider.connections == PER_ORIGIN


async def test_connections_idle_too_long_are_closed_whatever_their_origin(monkeypatch):
    from patchbay.core import upstream

    monkeypatch.setattr(upstream, "IDLE_SECONDS", 0.2)
    async with RawProvider(lambda head, number: ok()) as once, RawProvider(lambda head, number: ok()) as other:
        pool = UpstreamPool(address_allowed=lambda address: True)
        timeout = aiohttp.ClientTimeout(total=10, connect=5, sock_read=10)

        async def call(provider):
            response = await pool.request("GET", f"{provider.url}/api/items", timeout=timeout)
            await response.read()
            response.release()

        await call(once)
        (kept,) = pool._connections
        await asyncio.sleep(0.3)
        await call(other)  # a call to another origin closes the first origin's idle connection
        assert kept.closed and kept not in pool._connections
        await pool.close()


async def test_an_address_that_does_not_answer_is_passed_over_in_a_quarter_second():
    # a listener whose accept queue is full drops new SYNs: connecting to it hangs, as to an
    # address whose route is a black hole
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(0)
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(silent.getsockname())
        fillers.append(filler)
    async with RawProvider(lambda head, number: ok()) as provider:
        port = provider.server.sockets[0].getsockname()[1]
        pool = UpstreamPool(address_allowed=lambda address: True)
        # the name resolves to the silent address first, then to the provider's
        addresses = [
            (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", silent.getsockname()),
            (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("127.0.0.1", port)),
        ]
        pool._dns[("provider.test", port)] = (time.monotonic(), addresses)
        started = time.monotonic()
        response = await pool.request("GET", f"http://provider.test:{port}/api/items", timeout=aiohttp.ClientTimeout(total=30, connect=10, sock_read=30))
        assert response.status == 200 and await response.read() == b'{"ok":true}'
        response.release()
        assert time.monotonic() - started < 3
        await pool.close()
    for sock in (silent, *fillers):
        sock.close()


class BrokenWaitPack(RawHostPack):
    """A pack whose ``retry_after`` fails: a bug of the pack's, which must not hold connections."""

    class Customizer:
        def retry_after(self, response):
            raise RuntimeError("the pack's bug")

    @hookimpl
    def register_proxy(self, register):
        register("rawhost", self.Customizer())


async def test_an_answer_the_proxy_fails_to_hand_on_gives_its_turn_back(aiohttp_client, make_app, monkeypatch):
    from patchbay.core import upstream

    monkeypatch.setattr(upstream, "PER_ORIGIN", 2)
    async with RawProvider(lambda head, number: ok()) as provider:
        app = make_app(plugins=[BrokenWaitPack()])
        client = await aiohttp_client(app)
        ws = await create_workspace_with_key(app)
        connect = await client.post("/connect/v1/providers/rawhost/connect", json={"params": {"server": provider.url}}, headers=ws["headers"])
        headers = {**ws["headers"], "x-connection-id": (await connect.json())["connectionId"]}
        for _ in range(4):  # more than the origin's turns: each failed call gave its turn back
            response = await asyncio.wait_for(client.get("/connect/v1/proxy/rawhost/items", headers=headers), 10)
            assert response.status == 500


async def test_the_connection_client_reports_an_answer_cut_before_its_length_as_the_providers_failure(aiohttp_client, make_app):
    async def cut(head, number):
        return b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n" + b"x" * 10

    async with RawProvider(cut) as provider:
        app = make_app(plugins=[RawHostPack()])
        client = await aiohttp_client(app)
        ws = await create_workspace_with_key(app)
        connect = await client.post("/connect/v1/providers/rawhost/connect", json={"params": {"server": provider.url}}, headers=ws["headers"])
        provider_client = await open_client(app[SERVICES], workspace_id=ws["workspace_id"], connection_id=(await connect.json())["connectionId"])
        with pytest.raises(UpstreamFailed) as failed:  # the API answers it 502
            await provider_client.get("/items")
        assert "broke off" in failed.value.message
