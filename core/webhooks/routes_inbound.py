"""``GET/POST /webhook/{providerType}``: provider webhooks in (4.5, contract section 7).

GET answers the subscription handshake. POST verifies the signature with the provider's handler
and the deployment's ``webhook_secret``; a missing or wrong signature is 401 and nothing is kept. A
verified body is committed before the 200 (``core.webhooks.inbound_service``).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.responses import Media, response_model, returns
from patchbay.core.webhooks import inbound_service
from patchbay.core.webhooks.protocol import InboundRequest

routes = web.RouteTableDef()


@response_model
class InboundWebhookReceipt:
    """The event is stored (committed) under ``id``; routing and forwarding follow."""

    received: bool
    id: str


#: What a provider's handshake wants echoed (``hub.challenge``), as plain text.
CHALLENGE = Media("text/plain", {"type": "string", "description": "The challenge the provider sent"})


@routes.get("/webhook/{providerType}")
@returns(CHALLENGE, description="The verify token matched: the challenge, echoed")
async def handshake(request: web.Request) -> web.Response:
    """Answer a provider's subscription handshake (hub.challenge)."""
    answer = await inbound_service.handshake(request.app[SERVICES], request.match_info["providerType"], request.query)
    return web.Response(text=answer, content_type="text/plain")


@routes.post("/webhook/{providerType}")
@returns(
    InboundWebhookReceipt | dict[str, Any],
    description="Stored: the receipt; or, for a provider's verification request (Slack's url_verification), the answer it expects",
)
async def receive(request: web.Request) -> web.Response:
    """Receive a provider event: verified, stored, answered 200, then processed."""
    services = request.app[SERVICES]
    name = request.match_info["providerType"]
    inbound_service.webhook_handler(services, name)  # an unknown provider is 404 before its body is read
    inbound = InboundRequest(method=request.method, url=lambda: str(request.url), headers=request.headers, query=request.query, body=await request.read())
    received = await inbound_service.receive(services, name, inbound, connection_hint=request.query.get("connectionId") or None)
    if received.event_id is None:
        return web.json_response(received.immediate)
    # the receipt as InboundWebhookReceipt declares it, written by hand on this hot path
    return web.Response(body=b'{"received":true,"id":"' + received.event_id.encode() + b'"}', content_type="application/json")
