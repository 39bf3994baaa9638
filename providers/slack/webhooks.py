"""Slack's Events API scheme: ``X-Slack-Signature`` checked with the app's signing secret
(``webhook_secret`` of ``[providers.slack]``), ``url_verification`` answered at once."""

from __future__ import annotations

import json

from patchbay import InboundEvent, WebhookHandler, hmac_sha256_hex, signatures_match
from patchbay.providers._shared.webhooks import fresh


class SlackWebhooks(WebhookHandler):
    """``X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:timestamp:body">`` with
    ``X-Slack-Request-Timestamp``; answers ``url_verification`` at once; routes by ``team_id``."""

    routing_metadata_keys = ("team_id",)

    def verify(self, request, secret):
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        given = request.headers.get("X-Slack-Signature", "")
        if not secret or not given.startswith("v0=") or not fresh(timestamp):
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
