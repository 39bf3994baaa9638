"""Stripe's webhook scheme: ``Stripe-Signature`` checked with the deployment's endpoint secret
(``webhook_secret`` of ``[providers.stripe]``), Connect events routed by account."""

from __future__ import annotations

from patchbay import InboundEvent, WebhookHandler, hmac_sha256_hex, signatures_match
from patchbay.providers._shared.webhooks import fresh


class StripeWebhooks(WebhookHandler):
    """``Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">`` (several v1 during a secret
    roll); Connect events are routed by their ``account`` to the connection whose metadata
    ``stripe_account_id`` (or ``account_id``) matches."""

    routing_metadata_keys = ("stripe_account_id", "account_id")

    def verify(self, request, secret):
        header = request.headers.get("Stripe-Signature", "")
        parts = [item.split("=", 1) for item in header.split(",") if "=" in item]
        timestamps = [value for key, value in parts if key.strip() == "t"]
        candidates = [value for key, value in parts if key.strip() == "v1"]
        if not secret or not timestamps or not candidates or not fresh(timestamps[0]):
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
