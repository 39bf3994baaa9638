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
import time
import weakref
from collections.abc import AsyncIterable, Mapping
from typing import Any

import aiohttp
import attrs
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from patchbay.core.appkeys import OUTBOUND, REGISTRY
from patchbay.core.connections.auth import TemplateError, auth_for, connection_params, fill_url
from patchbay.core.connections.refresh import REFRESHABLE_MODES, RefreshFailed, can_refresh, refresh_connection
from patchbay.core.connections.runtime import ConnectionState, Throttled, retry_seconds, runtime
from patchbay.core.errors import DomainError
from patchbay.core.http.errors import ApiError, domain_status
from patchbay.core.outbound import Outbound, StreamIdle, UnsafeTarget
from patchbay.core.plugins.provider import Provider

#: A 429 whose wait is at most this long is retried once after the wait.
MAX_RETRY_WAIT = 2.0
#: Calls finding their connection held back (by its limit or the provider) wait at most this long.
MAX_QUEUE_WAIT = 1.0

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers", "transfer-encoding", "upgrade", "proxy-connection"}
)


#: per outbound client: the settings its timeouts were made from, and its (call, stream) timeouts
_timeouts: weakref.WeakKeyDictionary[Outbound, tuple[tuple[float, float], aiohttp.ClientTimeout, aiohttp.ClientTimeout]] = weakref.WeakKeyDictionary()


def _timeout(outbound: Outbound, stream: bool) -> aiohttp.ClientTimeout:
    """``outbound.stream_timeout()`` or ``call_timeout()``, made again only when its settings change."""
    settings = (outbound.limits.call_timeout_seconds, outbound.limits.stream_idle_seconds)
    made = _timeouts.get(outbound)
    if made is None or made[0] != settings:
        made = _timeouts[outbound] = (settings, outbound.call_timeout(), outbound.stream_timeout())
    return made[2] if stream else made[1]


class ProviderCallError(ApiError):
    """The call could not be made (the connection is unusable, the target is refused, the provider
    is unreachable); the status and message are the API's answer."""


@attrs.define
class ProxyCall:
    """The outgoing call, as a ``register_proxy`` customizer's ``prepare(call)`` may rewrite it."""

    method: str
    url: str
    headers: CIMultiDict
    body: Any
    provider: Provider
    connection_id: str
    params: Mapping[str, Any]


def drop_hop_by_hop(headers: Mapping[str, str], also: frozenset[str] = frozenset()) -> CIMultiDict:
    """A copy of ``headers`` without the hop-by-hop ones (RFC 9110 7.6.1), those the ``Connection``
    header names and the lower-case names in ``also``, made in one pass."""
    dropped = HOP_BY_HOP | also
    listed = headers.get("Connection")
    if listed:
        dropped = dropped | {token.strip().lower() for token in listed.split(",")}
    return CIMultiDict([(name, value) for name, value in headers.items() if name.lower() not in dropped])


def provider_of(app: web.Application, state: ConnectionState) -> Provider:
    provider = app[REGISTRY].provider(state.provider)
    if provider is None:
        raise ProviderCallError(404, f"Provider not found: {state.provider}")
    return provider


def base_url(app: web.Application, state: ConnectionState, provider: Provider) -> str:
    """The provider's API base URL with the connection's parameters filled in, checked once per
    snapshot against the outbound guard."""
    if state.base_url is None:
        try:
            url = fill_url(provider.api_base_url, provider, connection_params(provider, state.params))
            app[OUTBOUND].check(url)
        except (TemplateError, UnsafeTarget) as error:
            raise ProviderCallError(400, f"Cannot call {provider.display_name}: {error}") from None
        state.base_url = url.rstrip("/")
    return state.base_url


def target_url(base: str, path: str) -> str:
    """``base`` joined with ``path``; an absolute URL is accepted only on the base URL's origin."""
    if path.startswith(("http://", "https://")):
        if URL(path).origin() != URL(base).origin():
            raise ProviderCallError(400, "The path must stay on the provider's API host")
        return path
    if not path.startswith("/"):
        path = "/" + path
    return base + path


def injected(app: web.Application, state: ConnectionState, provider: Provider) -> tuple[dict[str, str], dict[str, str]]:
    if state.injected is None:
        try:
            state.injected = auth_for(app[REGISTRY], provider.name).inject(provider, state.credentials, connection_params(provider, state.params))
        except TemplateError as error:
            raise ProviderCallError(400, f"Cannot call {provider.display_name}: {error}") from None
    return state.injected


def provider_wait(app: web.Application, provider: Provider, response: aiohttp.ClientResponse) -> float | None:
    """How long the provider asks us to wait before the next call, if it says so."""
    customizer = app[REGISTRY].get("proxy", provider.name)
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


async def _acquire(app: web.Application, state: ConnectionState) -> None:
    limiter = runtime(app).limiter
    waited = 0.0
    while True:
        wait = limiter.acquire(state.id)
        if wait <= 0:
            return
        if waited + wait > MAX_QUEUE_WAIT:
            raise Throttled(wait)
        await asyncio.sleep(wait)
        waited += wait


async def send(
    app: web.Application,
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
) -> tuple[ConnectionState, aiohttp.ClientResponse]:
    """Make the call and answer the (possibly refreshed) state and the provider's response, not
    read yet: the caller reads or streams it and must release it. ``replayable`` is false for a
    streamed body, which cannot be sent twice (no retry then; the 401 still refreshes the token for
    the next call). ``query`` as a string is an already-encoded query string. ``stream`` is for a
    caller that streams the body on: no total time budget then, only the outbound idle limit."""
    started = time.perf_counter()
    rt = runtime(app)
    provider = provider_of(app, state)
    audit_path = path.split("?", 1)[0]
    status = 0
    error = None
    try:
        if state.status in ("invalid", "disconnected"):
            raise ProviderCallError(409, f"Connection {state.id} is {state.status}; reconnect it")
        try:
            await _acquire(app, state)
        except Throttled as throttled:
            status = 429
            raise ApiError(429, "ThrottlerException: Too Many Requests", headers={"Retry-After": str(max(1, round(throttled.retry_after)))}) from None
        if provider.auth_mode in REFRESHABLE_MODES and state.expires_within(30) and can_refresh(app, state):
            try:
                state = await refresh_connection(app, state.id, workspace_id=state.workspace_id)
            except RefreshFailed as failed:
                if failed.permanent:
                    raise ProviderCallError(409, f"Connection {state.id} is invalid: {failed.message}") from None
                # Not fatal: the provider may still accept the token; its answer is passed through.
        refreshed = waited = False
        while True:
            response = await _send_once(app, state, provider, method, path, query, headers, body, stream)
            status = response.status
            if status == 401 and not refreshed and can_refresh(app, state):
                refreshed = True
                stale = state.access_token
                try:
                    state = await refresh_connection(app, state.id, workspace_id=state.workspace_id, stale_token=stale)
                except RefreshFailed:
                    return state, response
                if replayable and state.access_token != stale:
                    response.release()
                    continue
                return state, response
            wait = provider_wait(app, provider, response)
            if wait is not None and wait > 0:
                rt.limiter.block(state.id, wait)
                if status == 429 and replayable and not waited and wait <= MAX_RETRY_WAIT:
                    waited = True
                    response.release()
                    await asyncio.sleep(wait)
                    continue
            return state, response
    except ApiError as api_error:
        status = status or api_error.status_code
        error = api_error.message
        raise
    except DomainError as refusal:  # the connection went away (deleted while a refresh ran)
        status = status or domain_status(refusal)
        error = refusal.message
        raise
    finally:
        rt.audit.add(
            workspace_id=state.workspace_id, connection_id=state.id, provider=state.provider, source=source,
            method=method, path=audit_path, status=status, duration_ms=(time.perf_counter() - started) * 1000, error=error,
        )  # fmt: skip


async def _send_once(app, state, provider, method, path, query, headers, body, stream) -> aiohttp.ClientResponse:
    url = target_url(base_url(app, state, provider), path)
    auth_headers, auth_query = injected(app, state, provider)
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
    customizer = app[REGISTRY].get("proxy", provider.name)
    if customizer is not None and hasattr(customizer, "prepare"):
        call = ProxyCall(method=method, url=url_value, headers=outgoing, body=body, provider=provider, connection_id=state.id, params=state.params)
        customizer.prepare(call)
        method, url_value, outgoing, body = call.method, call.url, call.headers, call.body
    try:
        outbound = app[OUTBOUND]
        timeout = _timeout(outbound, stream)
        return await outbound.session.request(method, url_value, headers=outgoing, data=body, allow_redirects=False, timeout=timeout)
    except UnsafeTarget as error:
        raise ProviderCallError(400, f"Refused target: {error}") from None
    except StreamIdle as error:
        raise ProviderCallError(408, f"The request body stopped arriving: {error}") from None
    except (aiohttp.ClientError, TimeoutError, OSError) as error:
        raise ProviderCallError(502, f"{provider.display_name} is unreachable: {type(error).__name__}") from None
