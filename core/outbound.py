"""The one outbound HTTP client and its policy for tenant-controlled targets.

Every call to a target a tenant can influence (proxied provider calls, flow ``http`` steps, alert
channels, webhook forwarding, CRM destinations, token URLs filled from connection parameters) goes
through :class:`Outbound`'s session, or its pool of keep-alive connections for the proxy's calls
(:mod:`patchbay.core.upstream`, which applies the same address rule), which enforce:

- **Addresses, at connect time.** :class:`GuardedConnector` checks every address it is about to
  connect to, whether it came from DNS or is written literally in the URL (``127.1``, ``[::1]``,
  ``[::ffff:127.0.0.1]``, ...), so a name that resolves to a private address later (DNS rebinding)
  is refused too. Only globally routable unicast addresses are allowed (:func:`is_public_address`).
- **Every redirect hop.** A session middleware checks each request, including every hop of a
  followed redirect, against :func:`check_target` (https, no private literal, no ``localhost``).
  Callers pass ``allow_redirects=False`` unless they mean to follow; those that follow are capped
  at ``[outbound] max_redirects`` hops.
- **Size.** :meth:`Outbound.read_body` reads at most ``max_response_bytes`` and inflates a
  compressed body to at most ``max_decompressed_bytes``; the session never decompresses by itself.
- **Time.** Plain calls have a total budget (``call_timeout_seconds``, 30 s); streams
  (:meth:`Outbound.stream_timeout`, :func:`idle_limited` for an upload) have no total, only a limit
  on the time without a byte (``stream_idle_seconds``).

``PATCHBAY_ALLOW_INSECURE_TARGETS`` turns the address and https rules off (development, tests); the
caps stay on.
"""

from __future__ import annotations

import asyncio
import ipaddress
import ssl
import zlib
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import aiohttp

from patchbay.core.settings import OutboundSettings

if TYPE_CHECKING:
    from patchbay.core.upstream import UpstreamPool

CONNECT_SECONDS = 10
READ_CHUNK = 64 * 1024

#: Decides whether one resolved or literal address may be connected to.
AddressRule = Callable[[str], bool]

#: what a refusal of the address and https rules adds: the setting that turns them off
ALLOW_INSECURE_HINT = (
    "outbound calls go only to https and public addresses unless the deployment sets `allow_insecure_targets = true` "
    "(PATCHBAY_ALLOW_INSECURE_TARGETS=true, `patchbay serve --allow-insecure-targets`; for development only)"
)


class UnsafeTarget(ValueError):
    """The URL is not an allowed outbound target; the message says why."""


class RefusedAddress(UnsafeTarget, aiohttp.ClientConnectionError):
    """Raised at connect time: every address of the host is private. Also an aiohttp connection
    error, so callers that treat an unreachable target as a failure need no extra case."""


class ResponseTooLarge(aiohttp.ClientPayloadError):
    """The body, as received or inflated, is larger than the configured cap."""


#: IPv6 prefixes that carry an IPv4 address in their last 32 bits and mean that address: IPv4-mapped
#: (``::ffff:a.b.c.d``), IPv4-translated (SIIT, ``::ffff:0:a.b.c.d``), the deprecated IPv4-compatible
#: form (``::a.b.c.d``) and the well-known NAT64 prefix (``64:ff9b::a.b.c.d``, DNS64 answers)
_TRANSLATED = tuple(ipaddress.IPv6Network(prefix) for prefix in ("::ffff:0:0/96", "::ffff:0:0:0/96", "::/96", "64:ff9b::/96"))
#: the local-use NAT64 prefix (RFC 8215): not global, and where it carries the IPv4 address depends
#: on the prefix length the network chose, so it is refused whatever it embeds
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 form carries (translated, 6to4, both ends of Teredo)."""
    if any(ip in prefix for prefix in _TRANSLATED):
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    return []


def is_public_address(address: str) -> bool:
    """Whether ``address`` is a globally routable unicast address. Refuses loopback, private
    ranges, link-local (169.254/16, fe80::/10), CGNAT (100.64/10), ``0.0.0.0``, multicast, IPv6 ULA
    (fc00::/7), local-use NAT64 (64:ff9b:1::/48), and an IPv6 form that carries any of those IPv4
    addresses (mapped, translated, compatible, NAT64, 6to4, Teredo): such a form is as public as
    every IPv4 address it carries."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _LOCAL_NAT64:
            return False
        embedded = _embedded_ipv4(ip)
        if embedded:
            return all(is_public_address(str(v4)) for v4 in embedded)
    return ip.is_global and not ip.is_multicast


def _any_address(address: str) -> bool:
    return True


def check_target(url: str, *, allow_insecure: bool, address_allowed: AddressRule = is_public_address) -> str:
    """Refuse a URL that is not https or names a private address literally; returns it. Names are
    checked by :class:`GuardedConnector` when connecting."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:  # "http://[" and other URLs that do not parse
        raise UnsafeTarget(f"{url!r} is not an absolute http(s) URL") from None
    if parts.scheme not in ("https", "http") or not host:
        raise UnsafeTarget(f"{url!r} is not an absolute http(s) URL")
    if allow_insecure:
        return url
    if parts.scheme != "https":
        raise UnsafeTarget(f"{url!r} must use https: {ALLOW_INSECURE_HINT}")
    host = host.rstrip(".")  # "localhost." is localhost
    if host == "localhost" or host.endswith(".localhost"):
        raise UnsafeTarget(f"{url!r} points at a private address: {ALLOW_INSECURE_HINT}")
    try:
        allowed = address_allowed(host)
    except ValueError:
        return url  # a name (or a legacy numeric form aiohttp refuses): checked when connecting
    if not allowed:
        raise UnsafeTarget(f"{url!r} points at a private address: {ALLOW_INSECURE_HINT}")
    return url


class GuardedConnector(aiohttp.TCPConnector):
    """A ``TCPConnector`` that drops every address ``address_allowed`` refuses, for names and
    literal IP addresses alike, right before connecting."""

    def __init__(self, *, address_allowed: AddressRule, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._address_allowed = address_allowed

    async def _resolve_host(self, host: str, port: int, traces: Any = None) -> list[Any]:
        addresses = await super()._resolve_host(host, port, traces)
        allowed = [entry for entry in addresses if self._address_allowed(entry["host"])]
        if not allowed:
            raise RefusedAddress(f"{host} does not resolve to a public address: {ALLOW_INSECURE_HINT}")
        return allowed


def _inflater(encoding: str) -> Any:
    """A decompressor for a ``Content-Encoding``, ``None`` for identity and unknown codings."""
    encoding = encoding.strip().lower()
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj(zlib.MAX_WBITS | 32)  # zlib or gzip header, detected
    return None


def inflate(body: bytes, encoding: str, *, limit: int) -> bytes:
    """``body`` decoded per ``encoding`` (gzip, deflate; anything else is returned as it is),
    producing at most ``limit`` bytes: a decompression bomb raises :class:`ResponseTooLarge` after
    ``limit`` bytes of work, not after inflating it whole. A corrupt body raises ``zlib.error``."""
    inflater = _inflater(encoding)
    if inflater is None:
        return body
    if encoding.strip().lower() == "deflate" and body[:1] not in (b"\x78", b"\x1f"):
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as some servers send it
    out = inflater.decompress(body, limit + 1)
    if len(out) > limit:  # stopped at limit + 1: the rest of the input is never inflated
        raise ResponseTooLarge(f"the body inflates beyond {limit} bytes")
    return out + inflater.flush()


class StreamIdle(TimeoutError):
    """The sender of a streamed upload went quiet for longer than the idle limit."""


async def idle_limited(chunks: AsyncIterable[bytes], seconds: float) -> AsyncIterator[bytes]:
    """``chunks``, failing with :class:`StreamIdle` when one takes more than ``seconds`` to come."""
    iterator = aiter(chunks)
    while True:
        try:
            async with asyncio.timeout(seconds):
                chunk = await anext(iterator)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise StreamIdle(f"no data for {seconds} s") from None
        yield chunk


class Outbound:
    """Owns the shared ``aiohttp.ClientSession``; open with ``start()``, close with ``close()``.

    ``address_allowed`` replaces :func:`is_public_address` (tests use it to treat one loopback
    address as public); with ``allow_insecure`` every address is allowed. ``ssl_context`` replaces
    the system's trust store (a private CA)."""

    def __init__(
        self,
        *,
        allow_insecure: bool,
        limits: OutboundSettings | None = None,
        address_allowed: AddressRule | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.allow_insecure = allow_insecure
        self.ssl_context = ssl_context
        self.limits = limits or OutboundSettings()
        self.address_allowed: AddressRule = _any_address if allow_insecure else (address_allowed or is_public_address)
        self._session: aiohttp.ClientSession | None = None
        self._pool: UpstreamPool | None = None

    async def start(self) -> None:
        from patchbay.core.upstream import UpstreamPool  # it builds on this module's rules

        self._pool = UpstreamPool(address_allowed=self.address_allowed, ssl_context=self.ssl_context)
        connector = GuardedConnector(address_allowed=self.address_allowed, limit=200, limit_per_host=50, ttl_dns_cache=60, ssl=self.ssl_context or True)
        # No cookie jar: the one session serves every workspace, and a cookie one tenant's call
        # received must never ride along on another tenant's call to the same host.
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=self.call_timeout(),
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            middlewares=(self._check_every_hop,),
        )

    async def _check_every_hop(self, request: aiohttp.ClientRequest, handler: Any) -> aiohttp.ClientResponse:
        self.check(str(request.url))
        return await handler(request)

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("outbound client is not started")
        return self._session

    @property
    def pool(self) -> UpstreamPool:
        """The keep-alive connections of the proxy's calls to providers (:mod:`patchbay.core.upstream`)."""
        if self._pool is None:
            raise RuntimeError("outbound client is not started")
        return self._pool

    def check(self, url: str) -> str:
        return check_target(url, allow_insecure=self.allow_insecure, address_allowed=self.address_allowed)

    def follow(self) -> dict[str, Any]:
        """Request keyword arguments for a caller that follows redirects (each hop is checked)."""
        return {"allow_redirects": True, "max_redirects": self.limits.max_redirects}

    def call_timeout(self) -> aiohttp.ClientTimeout:
        """The session's default: ``call_timeout_seconds`` for the whole call."""
        total = self.limits.call_timeout_seconds
        return aiohttp.ClientTimeout(total=total, connect=min(CONNECT_SECONDS, total), sock_read=total)

    def stream_timeout(self) -> aiohttp.ClientTimeout:
        """For a streamed call: no total budget, cut only after ``stream_idle_seconds`` idle."""
        idle = self.limits.stream_idle_seconds
        return aiohttp.ClientTimeout(total=None, connect=CONNECT_SECONDS, sock_read=idle)

    def idle_limited(self, chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
        """``chunks`` (an upload being streamed on), failing with :class:`StreamIdle` when the next
        chunk takes more than ``stream_idle_seconds``."""
        return idle_limited(chunks, self.limits.stream_idle_seconds)

    async def read_body(self, response: aiohttp.ClientResponse, *, decode: bool = True) -> bytes:
        """The response body, at most ``max_response_bytes`` as received and, with ``decode``,
        inflated per ``Content-Encoding`` to at most ``max_decompressed_bytes``.

        :raises ResponseTooLarge: either cap is exceeded (the rest is not read).
        :raises zlib.error: the body is not valid for its ``Content-Encoding``.
        """
        limit = self.limits.max_response_bytes
        if response.content_length is not None and response.content_length > limit:
            raise ResponseTooLarge(f"the response is {response.content_length} bytes, more than {limit}")
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(READ_CHUNK):
            size += len(chunk)
            if size > limit:
                raise ResponseTooLarge(f"the response is more than {limit} bytes")
            chunks.append(chunk)
        body = b"".join(chunks)
        encoding = response.headers.get("Content-Encoding")
        if decode and encoding:
            return inflate(body, encoding, limit=self.limits.max_decompressed_bytes)
        return body

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
        if self._session is not None:
            await self._session.close()
