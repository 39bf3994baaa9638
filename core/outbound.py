"""The one outbound HTTP client, with timeouts and a guard against server-side request forgery.

Callback, alert, proxy and CRM targets must be https and resolve only to public addresses, unless
``PATCHBAY_ALLOW_INSECURE_TARGETS`` is on. The address check happens in the resolver, at connect time,
so a name that resolves to a private address later (DNS rebinding) is refused too.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver
from aiohttp.resolver import DefaultResolver

DEFAULT_TIMEOUT = aiohttp.ClientTimeout(total=30, connect=10, sock_read=25)


class UnsafeTarget(ValueError):
    """The URL is not an allowed outbound target; the message says why."""


def is_public_address(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    return ip.is_global and not ip.is_multicast


class PublicOnlyResolver(AbstractResolver):
    """Resolves like the default resolver but drops every non-public address."""

    def __init__(self) -> None:
        self._inner = DefaultResolver()

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET):
        addresses = [entry for entry in await self._inner.resolve(host, port, family) if is_public_address(entry["host"])]
        if not addresses:
            raise OSError(f"{host} does not resolve to a public address")
        return addresses

    async def close(self) -> None:
        await self._inner.close()


def check_target(url: str, *, allow_insecure: bool) -> str:
    """Refuse a URL that is not https or names a private address literally; returns it."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise UnsafeTarget(f"{url!r} is not an absolute http(s) URL")
    if allow_insecure:
        return url
    if parts.scheme != "https":
        raise UnsafeTarget(f"{url!r} must use https")
    host = parts.hostname
    if host == "localhost" or host.endswith(".localhost"):
        raise UnsafeTarget(f"{url!r} points at a private address")
    try:
        public = is_public_address(host)
    except ValueError:
        return url  # a name: the resolver checks its addresses when connecting
    if not public:
        raise UnsafeTarget(f"{url!r} points at a private address")
    return url


class Outbound:
    """Owns the shared ``aiohttp.ClientSession``; open with ``start()``, close with ``close()``."""

    def __init__(self, *, allow_insecure: bool) -> None:
        self.allow_insecure = allow_insecure
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        resolver = None if self.allow_insecure else PublicOnlyResolver()
        connector = aiohttp.TCPConnector(limit=200, limit_per_host=50, resolver=resolver, ttl_dns_cache=60)
        # No cookie jar: the one session serves every workspace, and a cookie one tenant's call
        # received must never ride along on another tenant's call to the same host.
        self._session = aiohttp.ClientSession(connector=connector, timeout=DEFAULT_TIMEOUT, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar())

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("outbound client is not started")
        return self._session

    def check(self, url: str) -> str:
        return check_target(url, allow_insecure=self.allow_insecure)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
