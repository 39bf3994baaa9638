"""HubSpot's webhook scheme (``X-HubSpot-Signature-v3``, and v2) checked with the app's client
secret (``webhook_secret`` of ``[providers.hubspot]``)."""

from __future__ import annotations

import base64
import hashlib
import hmac

from patchbay import InboundEvent, WebhookHandler, signatures_match
from patchbay.providers._shared.webhooks import fresh


class HubSpotWebhooks(WebhookHandler):
    """v3: ``X-HubSpot-Signature-v3`` = base64 HMAC-SHA256 of method + URI + body + timestamp
    (``X-HubSpot-Request-Timestamp``, milliseconds); v2: ``X-HubSpot-Signature`` = hex SHA-256 of
    secret + method + URI + body. A body is a list of events, each routed by ``portalId`` to the
    connection whose metadata ``portal_id`` (or ``hub_id``) matches."""

    routing_metadata_keys = ("portal_id", "hub_id")

    def verify(self, request, secret):
        if not secret:
            return False
        v3 = request.headers.get("X-HubSpot-Signature-v3")
        if v3 is not None:
            timestamp = request.headers.get("X-HubSpot-Request-Timestamp", "")
            if not fresh(timestamp, milliseconds=True):
                return False
            message = f"{request.method}{request.url}".encode() + request.body + timestamp.encode()
            expected = base64.b64encode(hmac.new(secret.encode(), message, hashlib.sha256).digest()).decode()
            return signatures_match(expected, v3)
        v2 = request.headers.get("X-HubSpot-Signature")
        if v2 is not None and request.headers.get("X-HubSpot-Signature-Version", "v2") == "v2":
            expected = hashlib.sha256(f"{secret}{request.method}{request.url}".encode() + request.body).hexdigest()
            return signatures_match(expected, v2)
        return False

    def events(self, payload):
        items = payload if isinstance(payload, list) else [payload]
        return [
            InboundEvent(
                type=str(item.get("subscriptionType", "unknown")), data=item, external_id=str(item["eventId"]) if item.get("eventId") is not None else None
            )
            for item in items
            if isinstance(item, dict)
        ]

    def routing_keys(self, event):
        portal = event.data.get("portalId")
        return [("portal_id", str(portal)), ("hub_id", str(portal))] if portal is not None else []
