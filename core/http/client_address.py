"""The address of the client behind a request, for per-address limits and logs.

``X-Forwarded-For`` is believed only from ``PATCHBAY_TRUSTED_PROXIES`` (a list of networks): walking
it from the right, the first address that is not a trusted proxy is the client. Without trusted
proxies, or from any other peer, the peer's own address is the client, whatever the header says.
"""

from __future__ import annotations

import functools
import ipaddress
from typing import TypeAlias

from aiohttp import web

from patchbay.core.appkeys import SERVICES

Network: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network


@functools.lru_cache(maxsize=16)
def parse_networks(values: tuple[str, ...]) -> tuple[Network, ...]:
    """The networks of a ``trusted_proxies`` setting; ValueError names a bad one."""
    return tuple(ipaddress.ip_network(value, strict=False) for value in values)


def _trusted(address: str, networks: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_address(request: web.BaseRequest) -> str:
    peer = request.remote or "unknown"
    app = getattr(request, "app", None)
    try:
        trusted = app[SERVICES].settings.trusted_proxies if app is not None else ()
    except KeyError:  # an app without patchbay's services
        trusted = ()
    if not trusted:  # the usual case, on every request's access line: the peer, nothing to parse
        return peer
    networks = parse_networks(tuple(trusted))
    if not _trusted(peer, networks):
        return peer
    hops = [hop.strip() for header in request.headers.getall("X-Forwarded-For", []) for hop in header.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, networks):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return peer  # a garbled header from behind the proxy: fall back to the proxy's bucket
    return hops[0] if hops else peer
