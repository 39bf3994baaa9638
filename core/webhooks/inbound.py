"""``GET/POST /webhook/{providerType}``: provider webhooks in (4.5, contract section 7).

GET answers the subscription handshake. POST verifies the signature with the provider's handler
and the deployment's ``webhook_secret``; a missing or wrong signature is 401 and nothing is kept. A
verified body is committed (group commit, see ``ingest``) before the 200; routing, lead extraction
and forwarding happen afterwards in the job queue.
"""

from __future__ import annotations

import hashlib
from typing import Any

from aiohttp import web

from patchbay.core.appkeys import REGISTRY, WEBHOOK_INGEST
from patchbay.core.awaitables import maybe_await
from patchbay.core.http.errors import ApiError, bad_request, forbidden, not_found, unauthorized
from patchbay.core.http.responses import Media, response_model, returns
from patchbay.core.timeutil import new_id, utcnow
from patchbay.core.webhooks.protocol import InboundRequest

routes = web.RouteTableDef()


@response_model
class InboundWebhookReceipt:
    """The event is stored (committed) under ``id``; routing and forwarding follow."""

    received: bool
    id: str


#: What a provider's handshake wants echoed (``hub.challenge``), as plain text.
CHALLENGE = Media("text/plain", {"type": "string", "description": "The challenge the provider sent"})


def _handler(request: web.Request):
    name = request.match_info["providerType"]
    registry = request.app[REGISTRY]
    handler = registry.get("webhooks", name)
    if registry.provider(name) is None or handler is None:
        raise not_found(f"Provider not found: {name}")
    return name, handler, registry.provider_secrets(name)


@routes.get("/webhook/{providerType}")
@returns(CHALLENGE, description="The verify token matched: the challenge, echoed")
async def handshake(request: web.Request) -> web.Response:
    """Answer a provider's subscription handshake (hub.challenge)."""
    _, handler, secrets = _handler(request)
    answer = await maybe_await(handler.handshake(request.query, secrets.webhook_verify_token))
    if answer is None:
        raise forbidden("Verification token mismatch")
    return web.Response(text=str(answer), content_type="text/plain")


@routes.post("/webhook/{providerType}")
@returns(InboundWebhookReceipt | dict[str, Any], description="Stored: the receipt; or, for a provider's verification request (Slack's url_verification), the answer it expects")
async def receive(request: web.Request) -> web.Response:
    """Receive a provider event: verified, stored, answered 200, then processed."""
    name, handler, secrets = _handler(request)
    body = await request.read()
    inbound = InboundRequest(method=request.method, url=lambda: str(request.url), headers=request.headers, query=request.query, body=body)
    if not secrets.webhook_secret or not await maybe_await(handler.verify(inbound, secrets.webhook_secret)):
        raise unauthorized()
    immediate = await maybe_await(handler.immediate_response(inbound))
    if immediate is not None:
        return web.json_response(immediate)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise bad_request("The body must be UTF-8 text") from None
    now = utcnow()
    event_id = new_id()
    row = {
        "id": event_id, "workspace_id": None, "provider": name, "status": "RECEIVED", "body": text,
        "body_hash": hashlib.sha256(name.encode() + b"\n" + body).hexdigest(),
        "connection_hint": request.query.get("connectionId") or None, "created_at": now, "updated_at": now,
    }  # fmt: skip
    try:
        await request.app[WEBHOOK_INGEST].submit(row)
    except Exception:
        raise ApiError(503, "The event could not be stored; retry later") from None
    # the receipt as InboundWebhookReceipt declares it, written by hand on this hot path
    return web.Response(body=b'{"received":true,"id":"' + event_id.encode() + b'"}', content_type="application/json")
