"""The proxy (spec 4.6): calls to a connected provider with the stored credential injected.

- ``POST /connect/v1/proxy/{providerType}`` with ``x-connection-id`` and the JSON envelope
  ``{method, path, body?, headers?, query?}``: the documented form;
- ``{METHOD} /connect/v1/proxy/{providerType}/{path}`` with ``x-connection-id``: the same call in
  passthrough form; the request body is streamed to the provider (bodies up to
  ``BUFFER_LIMIT`` are buffered so that a 401 can be retried after a refresh), the query string is
  forwarded as is.

Without ``x-connection-id`` the workspace's active connection of the provider is used. The
provider's answer is passed through (status, headers without hop-by-hop ones, body streamed when
large or of unknown length). Errors of the proxy itself use the API's error envelope.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from pydantic import ValidationError

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.client import active_connection_id
from patchbay.core.connections.runtime import ConnectionState
from patchbay.core.connections.store import ConnectionNotFound, load_state
from patchbay.core.errors import Invalid, UpstreamFailed
from patchbay.core.http.bodies import adapter_of, read_body
from patchbay.core.http.errors import ApiError
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import ANY_MEDIA, returns
from patchbay.core.proxy.api_models import ProxyEnvelope
from patchbay.core.proxy.engine import drop_hop_by_hop, send
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
BUFFER_LIMIT = 1024 * 1024
#: responses up to this size with a known length are answered in one piece (cheaper than a stream)
SMALL_RESPONSE = 256 * 1024
CHUNK = 64 * 1024
#: request headers that belong to the call to patchbay, not to the provider
OWN_HEADERS = frozenset({"host", "x-api-key", "authorization", "x-connection-id", "cookie", "content-length", "x-request-id", "expect"})
#: set again by the answer itself
LENGTH = frozenset({"content-length"})


async def _connection(request: web.Request, provider_type: str) -> ConnectionState:
    principal = principal_of(request)
    services = request.app[SERVICES]
    connection_id = request.headers.get("x-connection-id", "").strip()
    if not connection_id:
        connection_id = await active_connection_id(services, workspace_id=principal.workspace_id, provider_name=provider_type)
    state = await load_state(services, connection_id, workspace_id=principal.workspace_id)
    if state.provider != provider_type:
        raise ConnectionNotFound(connection_id)
    return state


async def _envelope(request: web.Request) -> ProxyEnvelope:
    """The JSON envelope. Its bytes are validated by pydantic in one pass when they hold no
    ``\\u`` escape (the only way JSON text carries a NUL or half a surrogate pair, which
    ``read_body`` refuses); any problem, and any escape, takes ``read_body``'s way, whose 400
    names it. Both ways answer the same envelope for the same bytes."""
    raw = await request.read()
    if b"\\u" not in raw:
        try:
            return adapter_of(ProxyEnvelope).validate_json(raw, strict=True)
        except ValidationError:
            pass
    return await read_body(request, ProxyEnvelope)


async def _answer(request: web.Request, upstream) -> web.StreamResponse:
    try:
        headers = drop_hop_by_hop(upstream.headers, also=LENGTH)
        length = upstream.content_length
        if request.method == "HEAD" or upstream.status in (204, 304):
            return web.Response(status=upstream.status, headers=headers)
        if length is not None and length <= SMALL_RESPONSE:
            try:
                body = await upstream.read()
            except (aiohttp.ClientError, TimeoutError) as error:  # nothing is sent yet: a clean 502
                raise UpstreamFailed(f"The provider's answer broke off: {error or 'nothing arrived in time'}") from None
            return web.Response(status=upstream.status, headers=headers, body=body)
        response = web.StreamResponse(status=upstream.status, headers=headers)
        if length is not None:
            response.content_length = length
        await response.prepare(request)
        try:
            async for chunk in upstream.content.iter_chunked(CHUNK):
                await response.write(chunk)
        except (aiohttp.ClientError, TimeoutError):
            # The provider failed or went quiet mid-stream: the status is sent already, so the
            # only honest answer is a cut connection, never a body that looks complete.
            if request.transport is not None:
                request.transport.close()
            return response
        await response.write_eof()
        return response
    finally:
        upstream.release()


@routes.post("/connect/v1/proxy/{providerType}")
@accepts(ProxyEnvelope)
@returns(ANY_MEDIA, description="The provider's answer as it is: its status, headers (without hop-by-hop ones) and body")
@requires("connections.write")
async def proxy(request: web.Request) -> web.StreamResponse:
    """Call the provider with the connection's credentials: body ``{method, path, body?, headers?,
    query?}``, header ``x-connection-id``; answers the provider's response as it is."""
    state = await _connection(request, request.match_info["providerType"])
    envelope = await _envelope(request)
    method = envelope.method.upper()
    if method not in METHODS:
        raise Invalid(f"Validation failed: method must be one of {', '.join(METHODS)}")
    if not envelope.path:
        raise Invalid("Validation failed: path is required")
    headers = CIMultiDict((str(k), str(v)) for k, v in (envelope.headers or {}).items() if str(k).lower() not in OWN_HEADERS)
    query = envelope.query if envelope.query is not None else envelope.params
    body: bytes | None = None
    if envelope.body is not None:
        if isinstance(envelope.body, str):
            body = envelope.body.encode()
        else:
            body = json.dumps(envelope.body, separators=(",", ":")).encode()
            headers.setdefault("Content-Type", "application/json")
    _, upstream = await send(
        request.app[SERVICES],
        state,
        method=method,
        path=envelope.path,
        headers=headers,
        body=body,
        query=[(str(k), str(v)) for k, v in query.items()] if query else None,
        stream=True,
    )
    return await _answer(request, upstream)


@routes.route("*", "/connect/v1/proxy/{providerType}/{path:.*}")
@returns(ANY_MEDIA, description="The provider's answer as it is: its status, headers (without hop-by-hop ones) and body")
@requires("connections.write")
async def proxy_passthrough(request: web.Request) -> web.StreamResponse:
    """Passthrough form of the proxy: the method, path, query and body of this request go to the
    provider (body streamed), with the connection's credentials injected."""
    if request.method not in METHODS:
        raise ApiError(405, "Method Not Allowed")
    state = await _connection(request, request.match_info["providerType"])
    headers = drop_hop_by_hop(request.headers, also=OWN_HEADERS)
    body: Any = None
    replayable = True
    if request.body_exists:
        length = request.content_length
        if length is not None and length <= BUFFER_LIMIT:
            body = await request.read()
        else:
            body = request.app[SERVICES].outbound.idle_limited(request.content.iter_chunked(CHUNK))
            replayable = False
            if length is not None:
                headers.append(("Content-Length", str(length)))
    _, upstream = await send(
        request.app[SERVICES],
        state,
        method=request.method,
        path="/" + request.match_info["path"],
        headers=headers,
        body=body,
        query=request.rel_url.raw_query_string or None,
        replayable=replayable,
        stream=True,
    )
    return await _answer(request, upstream)
