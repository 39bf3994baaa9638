"""HubSpot's webhook scheme: v3 and v2 signatures and batches of events."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

from multidict import CIMultiDict

from patchbay import InboundEvent, InboundRequest
from patchbay.providers.hubspot.webhooks import HubSpotWebhooks

SECRET = "whsec_scheme_secret"


def request(body: bytes, headers: dict, url="https://hooks.example.com/webhook/x", method="POST") -> InboundRequest:
    return InboundRequest(method=method, url=url, headers=CIMultiDict(headers), query={}, body=body)


def test_hubspot_v3_and_v2_signatures_and_batches():
    hubspot = HubSpotWebhooks()
    body = json.dumps(
        [
            {"eventId": 1, "subscriptionType": "contact.creation", "portalId": 62515, "objectId": 7},
            {"eventId": 2, "subscriptionType": "contact.deletion", "portalId": 62515, "objectId": 8},
        ]
    ).encode()
    url = "https://hooks.example.com/webhook/hubspot?x=1"
    ts = str(int(time.time() * 1000))
    v3 = base64.b64encode(hmac.new(SECRET.encode(), f"POST{url}".encode() + body + ts.encode(), hashlib.sha256).digest()).decode()
    assert hubspot.verify(request(body, {"X-HubSpot-Signature-v3": v3, "X-HubSpot-Request-Timestamp": ts}, url=url), SECRET)
    assert not hubspot.verify(request(body, {"X-HubSpot-Signature-v3": v3, "X-HubSpot-Request-Timestamp": ts}, url=url + "&y=2"), SECRET)
    v2 = hashlib.sha256(f"{SECRET}POST{url}".encode() + body).hexdigest()
    assert hubspot.verify(request(body, {"X-HubSpot-Signature": v2, "X-HubSpot-Signature-Version": "v2"}, url=url), SECRET)
    assert not hubspot.verify(request(body, {"X-HubSpot-Signature": v2}, url=url), "other")
    events = hubspot.events(json.loads(body))
    assert [e.type for e in events] == ["contact.creation", "contact.deletion"]
    assert hubspot.routing_keys(InboundEvent(type="x", data={"portalId": 62515}))[0] == ("portal_id", "62515")
