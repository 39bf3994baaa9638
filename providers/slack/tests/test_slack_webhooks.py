"""Slack's webhook scheme: signature, timestamp window and ``url_verification``."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

from multidict import CIMultiDict

from patchbay import InboundRequest
from patchbay.providers.slack.webhooks import SlackWebhooks

SECRET = "whsec_scheme_secret"


def request(body: bytes, headers: dict, url="https://hooks.example.com/webhook/x", method="POST") -> InboundRequest:
    return InboundRequest(method=method, url=url, headers=CIMultiDict(headers), query={}, body=body)


def test_slack_signature_and_url_verification():
    slack = SlackWebhooks()
    body = json.dumps({"type": "event_callback", "team_id": "T1", "event_id": "Ev1", "event": {"type": "message", "text": "hi"}}).encode()
    ts = str(int(time.time()))
    signature = "v0=" + hmac.new(SECRET.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    assert slack.verify(request(body, {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}), SECRET)
    assert not slack.verify(request(body + b" ", {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}), SECRET)
    stale = str(int(time.time()) - 1000)
    assert not slack.verify(request(body, {"X-Slack-Request-Timestamp": stale, "X-Slack-Signature": signature}), SECRET)
    (event,) = slack.events(json.loads(body))
    assert event.type == "message" and slack.routing_keys(event) == [("team_id", "T1")]
    challenge = json.dumps({"type": "url_verification", "challenge": "abc"}).encode()
    assert slack.immediate_response(request(challenge, {})) == {"challenge": "abc"}
