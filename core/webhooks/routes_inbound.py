"""``GET/POST /webhook/{providerType}``: provider webhooks in (4.5, contract section 7).

GET answers the subscription handshake. POST verifies the signature with the provider's handler
and the deployment's ``webhook_secret`` (a handler that checks a signed URL reads the deployment's
public URL of the request, from the ``base_url`` setting); a missing or wrong signature is 401 and
nothing is kept. A verified body is committed before the 200 (``core.webhooks.inbound_service``).
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
    # the challenge is the caller's text: never let a browser sniff it into HTML (Dropbox asks for this)
    return web.Response(text=answer, content_type="text/plain", headers={"X-Content-Type-Options": "nosniff"})


@routes.post("/webhook/{providerType}")
@returns(
    InboundWebhookReceipt | dict[str, Any],
    description="Stored: the receipt; or, for a provider's handshake or verification request (Asana's X-Hook-Secret, Zoom's and Slack's url_verification), the answer it expects",
)
async def receive(request: web.Request) -> web.Response:
    """Receive a provider event: verified, stored, answered 200, then processed."""
    services = request.app[SERVICES]
    name = request.match_info["providerType"]
    inbound_service.webhook_handler(services, name)  # an unknown provider is 404 before its body is read
    # the URL a provider signs (Trello, HubSpot, Twilio) is the public one it was given: the configured base URL and the
    # path and query as sent, never the Host header, which the caller chooses
    inbound = InboundRequest(
        method=request.method,
        url=lambda: services.settings.public_base_url + request.raw_path,
        headers=request.headers,
        query=request.query,
        body=await request.read(),
    )
    received = await inbound_service.receive(services, name, inbound, connection_hint=request.query.get("connectionId") or None)
    if received.reply is not None:
        reply = received.reply
        if reply.body is None:
            return web.Response(status=reply.status, headers=reply.headers)
        return web.json_response(reply.body, status=reply.status, headers=reply.headers)
    if received.event_id is None:
        return web.json_response(received.immediate)
    # the receipt as InboundWebhookReceipt declares it, written by hand on this hot path
    return web.Response(body=b'{"received":true,"id":"' + received.event_id.encode() + b'"}', content_type="application/json")
