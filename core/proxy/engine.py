"""One authenticated call to a provider with a connection's credentials: the path every proxied
request and every :class:`ConnectionClient` request takes.

In order: the connection's rate limit (and any back-off the provider asked for); a refresh when the
token is about to expire; the URL from the provider's base URL with the connection's parameters;
the credential injected (headers and query); the target checked against the SSRF guard; the call;
on 401 one refresh and one retry; on 429 the provider's wait honoured (``Provider.retry_headers``,
``Retry-After`` or the proxy hook), once, when it is short; an audit row (never a secret).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterable, Mapping
from typing import TYPE_CHECKING, Any

import aiohttp
import attrs
from multidict import CIMultiDict
from yarl import URL

from patchbay.core.connections.auth import TemplateError, auth_for, connection_params, fill_url
from patchbay.core.connections.refresh import REFRESHABLE_MODES, RefreshFailed, can_refresh, refresh_connection
from patchbay.core.connections.runtime import ConnectionState, Throttled, retry_seconds
from patchbay.core.errors import Conflict, DomainError, Invalid, NotFound, RateLimited, RequestTimeout, UpstreamFailed
from patchbay.core.http.errors import domain_status
from patchbay.core.integrations import service as integrations
from patchbay.core.outbound import StreamIdle, UnsafeTarget
from patchbay.core.plugins.provider import Provider
from patchbay.core.upstream import BadHeader, UpstreamResponse

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: A 429 whose wait is at most this long is retried once after the wait.
MAX_RETRY_WAIT = 2.0
#: Calls finding their connection held back (by its limit or the provider) wait at most this long.
MAX_QUEUE_WAIT = 1.0

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers", "transfer-encoding", "upgrade", "proxy-connection"}
)


@attrs.define
class ProxyCall:
    """The outgoing call, as a ``register_proxy`` customizer's ``prepare(call)`` may rewrite it.
    ``body`` is bytes, an async iterable of bytes (a streamed upload) or None; text is sent as UTF-8."""

    method: str
    url: str
    headers: CIMultiDict
    body: Any
    provider: Provider
    connection_id: str
    params: Mapping[str, Any]


@functools.lru_cache(maxsize=32)
def _dropped(also: frozenset[str]) -> frozenset[str]:
    return HOP_BY_HOP | also


def drop_hop_by_hop(headers: Mapping[str, str], also: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """The items of ``headers`` without the hop-by-hop ones (RFC 9110 7.6.1), those the
    ``Connection`` header names and the lower-case names in ``also``, made in one pass: pairs,
    which a response or the next request takes as its headers without another copy."""
    dropped = _dropped(also)
    listed = headers.get("Connection")
    if listed:
        dropped = dropped | {token.strip().lower() for token in listed.split(",")}
    return [(name, value) for name, value in headers.items() if name.lower() not in dropped]


def provider_of(services: Services, state: ConnectionState) -> Provider:
    provider = services.registry.provider(state.provider)
    if provider is None:
        raise NotFound(f"Provider not found: {state.provider}")
    return provider


def base_url(services: Services, state: ConnectionState, provider: Provider) -> str:
    """The provider's API base URL with the connection's parameters filled in, checked once per
    snapshot against the outbound guard."""
    if state.base_url is None:
        try:
            url = fill_url(provider.api_base_url, provider, connection_params(provider, state.params))
            services.outbound.check(url)
        except (TemplateError, UnsafeTarget) as error:
            raise Invalid(f"Cannot call {provider.display_name}: {error}") from None
        state.base_url = url.rstrip("/")
    return state.base_url


def target_url(base: str, path: str) -> str:
    """``base`` joined with ``path``; an absolute URL is accepted only on the base URL's origin."""
    if path.startswith(("http://", "https://")):
        if URL(path).origin() != URL(base).origin():
            raise Invalid("The path must stay on the provider's API host")
        return path
    if not path.startswith("/"):
        path = "/" + path
    return base + path


def injected(services: Services, state: ConnectionState, provider: Provider) -> tuple[dict[str, str], dict[str, str]]:
    if state.injected is None:
        try:
            state.injected = auth_for(services.registry, provider.name).inject(provider, state.credentials, connection_params(provider, state.params))
        except TemplateError as error:
            raise Invalid(f"Cannot call {provider.display_name}: {error}") from None
    return state.injected


def provider_wait(services: Services, provider: Provider, response: UpstreamResponse) -> float | None:
    """How long the provider asks us to wait before the next call, if it says so."""
    customizer = services.registry.get("proxy", provider.name)
    if customizer is not None and hasattr(customizer, "retry_after"):
        wait = customizer.retry_after(response)
        if wait is not None:
            return float(wait)
    names = provider.retry_headers
    headers = response.headers
    if response.status == 429 or response.status == 503:
        for name in (names.retry_after, "Retry-After", names.reset_at):
            if name and name in headers:
                wait = retry_seconds(headers[name])
                if wait is not None:
                    return wait
        return 1.0 if response.status == 429 else None
    if names.remaining and headers.get(names.remaining, "").strip() == "0":
        for name in (names.reset_at, names.retry_after, "Retry-After"):
            if name and name in headers:
                return retry_seconds(headers[name])
    return None


async def _acquire(services: Services, state: ConnectionState) -> None:
    limiter = services.connections.limiter
    waited = 0.0
    while True:
        wait = await limiter.acquire(state.id)
        if wait <= 0:
            return
        if waited + wait > MAX_QUEUE_WAIT:
            raise Throttled(wait)
        await asyncio.sleep(wait)
        waited += wait


async def send(
    services: Services,
    state: ConnectionState,
    *,
    method: str,
    path: str,
    query: Mapping[str, str] | list[tuple[str, str]] | str | None = None,
    headers: Mapping[str, str] | None = None,
    body: bytes | AsyncIterable[bytes] | None = None,
    replayable: bool = True,
    stream: bool = False,
    source: str = "proxy",
) -> tuple[ConnectionState, UpstreamResponse]:
    """Make the call and answer the (possibly refreshed) state and the provider's response, not
    read yet: the caller reads or streams it and must release it. ``replayable`` is false for a
    streamed body, which cannot be sent twice (no retry then; the 401 still refreshes the token for
    the next call). ``query`` as a string is an already-encoded query string. ``stream`` is for a
    caller that streams the body on: no total time budget then, only the outbound idle limit."""
    started = time.perf_counter()
    rt = services.connections
    provider = provider_of(services, state)
    audit_path = path.split("?", 1)[0]
    status = 0
    error = None
    try:
        if state.status in ("invalid", "disconnected"):
            raise Conflict(f"Connection {state.id} is {state.status}; reconnect it")
        try:
            if not rt.limiter.acquire_now(state.id):
                await _acquire(services, state)
        except Throttled as throttled:
            status = 429
            raise RateLimited("ThrottlerException: Too Many Requests", retry_after=throttled.retry_after) from None
        if provider.auth_mode in REFRESHABLE_MODES and state.expires_within(30) and can_refresh(services, state):
            try:
                state = await refresh_connection(services, state.id, workspace_id=state.workspace_id)
            except RefreshFailed as failed:
                if failed.permanent:
                    raise Conflict(f"Connection {state.id} is invalid: {failed.message}") from None
                # Not fatal: the provider may still accept the token; its answer is passed through.
        refreshed = waited = False
        while True:
            response = await _send_once(services, state, provider, method, path, query, headers, body, stream)
            status = response.status
            try:
                if status == 401 and not refreshed and can_refresh(services, state):
                    refreshed = True
                    stale = state.access_token
                    try:
                        state = await refresh_connection(services, state.id, workspace_id=state.workspace_id, stale_token=stale)
                    except RefreshFailed:
                        return state, response
                    if replayable and state.access_token != stale:
                        response.release()
                        continue
                    return state, response
                wait = provider_wait(services, provider, response)
                if wait is not None and wait > 0:
                    rt.limiter.block(state.id, wait)
                    if status == 429 and replayable and not waited and wait <= MAX_RETRY_WAIT:
                        waited = True
                        response.release()
                        await asyncio.sleep(wait)
                        continue
                return state, response
            except BaseException:
                response.release()  # the caller never gets it: its connection and turn go back now
                raise
    except DomainError as refusal:  # refused here, or the connection went away (deleted while a refresh ran)
        status = status or domain_status(refusal)
        error = refusal.message
        raise
    finally:
        rt.audit.add(
            workspace_id=state.workspace_id,
            connection_id=state.id,
            provider=state.provider,
            source=source,
            method=method,
            path=audit_path,
            status=status,
            duration_ms=(time.perf_counter() - started) * 1000,
            error=error,
        )


async def _send_once(services, state, provider, method, path, query, headers, body, stream) -> UpstreamResponse:
    url = target_url(await integrations.override_base_url(services, state, provider) or base_url(services, state, provider), path)
    auth_headers, auth_query = injected(services, state, provider)
    outgoing = CIMultiDict(headers or {})
    for name, value in auth_headers.items():
        outgoing[name] = value
    if auth_query or query:
        parsed = URL(url)
        if isinstance(query, str):
            parsed = URL(f"{url}{'&' if parsed.query_string else '?'}{query}", encoded=True) if query else parsed
        elif query:
            parsed = parsed.extend_query(query)
        if auth_query:
            parsed = parsed.update_query(auth_query)
        url_value: Any = parsed
    else:
        url_value = url
    method = method.upper()
    customizer = services.registry.get("proxy", provider.name)
    if customizer is not None and hasattr(customizer, "prepare"):
        call = ProxyCall(method=method, url=url_value, headers=outgoing, body=body, provider=provider, connection_id=state.id, params=state.params)
        customizer.prepare(call)
        method, url_value, outgoing, body = call.method, call.url, call.headers, call.body
        if isinstance(body, str):
            body = body.encode()
        elif isinstance(body, bytearray | memoryview):
            body = bytes(body)
        # base_url() checked the base URL once; a rewritten URL is checked as it is
        try:
            services.outbound.check(str(url_value))
        except UnsafeTarget as error:
            raise Invalid(f"Refused target: {error}") from None
    try:
        timeout = services.connections.timeouts.get(services.outbound, stream=stream)
        return await services.outbound.pool.request(method, url_value, headers=outgoing, body=body, timeout=timeout)
    except UnsafeTarget as error:
        raise Invalid(f"Refused target: {error}") from None
    except BadHeader as error:
        raise Invalid(f"Validation failed: {error}") from None
    except StreamIdle as error:
        raise RequestTimeout(f"The request body stopped arriving: {error}") from None
    except (aiohttp.ClientError, TimeoutError, OSError) as error:
        raise UpstreamFailed(f"{provider.display_name} is unreachable: {type(error).__name__}") from None
