"""Webhook verification and routing for providers that sign differently from Meta: Stripe
(``Stripe-Signature``), Slack (``X-Slack-Signature``, ``url_verification``) and HubSpot
(``X-HubSpot-Signature-v3``, and v2). Each checks the deployment's ``webhook_secret`` of
``[providers.<name>]`` (Stripe's endpoint secret, Slack's signing secret, HubSpot's app client
secret) and refuses requests older than five minutes where the scheme carries a timestamp."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

from patchbay import InboundEvent, WebhookHandler, hmac_sha256_hex, hookimpl, signatures_match

TOLERANCE_SECONDS = 300


def _fresh(timestamp: str, *, now: float | None = None, milliseconds: bool = False) -> bool:
    try:
        moment = int(timestamp) / (1000 if milliseconds else 1)
    except (TypeError, ValueError):
        return False
    return abs((time.time() if now is None else now) - moment) <= TOLERANCE_SECONDS


class StripeWebhooks(WebhookHandler):
    """``Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">`` (several v1 during a secret
    roll); Connect events are routed by their ``account`` to the connection whose metadata
    ``stripe_account_id`` (or ``account_id``) matches."""

    def verify(self, request, secret):
        header = request.headers.get("Stripe-Signature", "")
        parts = [item.split("=", 1) for item in header.split(",") if "=" in item]
        timestamps = [value for key, value in parts if key.strip() == "t"]
        candidates = [value for key, value in parts if key.strip() == "v1"]
        if not secret or not timestamps or not candidates or not _fresh(timestamps[0]):
            return False
        expected = hmac_sha256_hex(secret, timestamps[0].encode() + b"." + request.body)
        return any(signatures_match(expected, candidate) for candidate in candidates)

    def events(self, payload):
        if not isinstance(payload, dict) or "type" not in payload:
            return []
        return [InboundEvent(type=str(payload["type"]), data=payload, external_id=payload.get("id"))]

    def routing_keys(self, event):
        account = event.data.get("account")
        return [("stripe_account_id", str(account)), ("account_id", str(account))] if account else []


class SlackWebhooks(WebhookHandler):
    """``X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:timestamp:body">`` with
    ``X-Slack-Request-Timestamp``; answers ``url_verification`` at once; routes by ``team_id``."""

    def verify(self, request, secret):
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        given = request.headers.get("X-Slack-Signature", "")
        if not secret or not given.startswith("v0=") or not _fresh(timestamp):
            return False
        return signatures_match("v0=" + hmac_sha256_hex(secret, f"v0:{timestamp}:".encode() + request.body), given)

    def immediate_response(self, request):
        try:
            payload = json.loads(request.body)
        except ValueError:
            return None
        if isinstance(payload, dict) and payload.get("type") == "url_verification":
            return {"challenge": payload.get("challenge")}
        return None

    def events(self, payload):
        if not isinstance(payload, dict) or not isinstance(payload.get("event"), dict):
            return []
        data = {**payload["event"], "team_id": payload.get("team_id")}
        return [InboundEvent(type=str(payload["event"].get("type", "unknown")), data=data, external_id=payload.get("event_id"))]

    def routing_keys(self, event):
        team = event.data.get("team_id")
        return [("team_id", str(team))] if team else []


class HubSpotWebhooks(WebhookHandler):
    """v3: ``X-HubSpot-Signature-v3`` = base64 HMAC-SHA256 of method + URI + body + timestamp
    (``X-HubSpot-Request-Timestamp``, milliseconds); v2: ``X-HubSpot-Signature`` = hex SHA-256 of
    secret + method + URI + body. A body is a list of events, each routed by ``portalId`` to the
    connection whose metadata ``portal_id`` (or ``hub_id``) matches."""

    def verify(self, request, secret):
        if not secret:
            return False
        v3 = request.headers.get("X-HubSpot-Signature-v3")
        if v3 is not None:
            timestamp = request.headers.get("X-HubSpot-Request-Timestamp", "")
            if not _fresh(timestamp, milliseconds=True):
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
            InboundEvent(type=str(item.get("subscriptionType", "unknown")), data=item, external_id=str(item["eventId"]) if item.get("eventId") is not None else None)
            for item in items
            if isinstance(item, dict)
        ]

    def routing_keys(self, event):
        portal = event.data.get("portalId")
        return [("portal_id", str(portal)), ("hub_id", str(portal))] if portal is not None else []


@hookimpl
def register_webhooks(register):
    register("stripe", StripeWebhooks())
    register("slack", SlackWebhooks())
    register("hubspot", HubSpotWebhooks())
