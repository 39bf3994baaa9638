"""The Stripe, Slack and HubSpot signature schemes (providers/webhook_schemes) and their routing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

from multidict import CIMultiDict

from patchbay import InboundEvent, InboundRequest
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.webhooks.models import WebhookEvent
from patchbay.core.webhooks.testing import add_connection
from patchbay.providers.webhook_schemes import HubSpotWebhooks, SlackWebhooks, StripeWebhooks

SECRET = "whsec_scheme_secret"


def request(body: bytes, headers: dict, url="https://hooks.example.com/webhook/x", method="POST") -> InboundRequest:
    return InboundRequest(method=method, url=url, headers=CIMultiDict(headers), query={}, body=body)


def stripe_header(body: bytes, secret=SECRET, at=None) -> str:
    t = str(int(at or time.time()))
    return f"t={t},v1={hmac.new(secret.encode(), t.encode() + b'.' + body, hashlib.sha256).hexdigest()}"


def test_stripe_signature_timestamp_and_routing():
    body = b'{"id":"evt_1","type":"invoice.paid","account":"acct_9"}'
    stripe = StripeWebhooks()
    assert stripe.verify(request(body, {"Stripe-Signature": stripe_header(body)}), SECRET)
    assert not stripe.verify(request(body, {"Stripe-Signature": stripe_header(body, "other")}), SECRET)
    assert not stripe.verify(request(body, {"Stripe-Signature": stripe_header(body, at=time.time() - 3600)}), SECRET)
    assert not stripe.verify(request(body, {}), SECRET)
    (event,) = stripe.events(json.loads(body))
    assert (event.type, event.external_id) == ("invoice.paid", "evt_1")
    assert stripe.routing_keys(event)[0] == ("stripe_account_id", "acct_9")


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


def test_hubspot_v3_and_v2_signatures_and_batches():
    hubspot = HubSpotWebhooks()
    body = json.dumps([{"eventId": 1, "subscriptionType": "contact.creation", "portalId": 62515, "objectId": 7},
                       {"eventId": 2, "subscriptionType": "contact.deletion", "portalId": 62515, "objectId": 8}]).encode()  # fmt: skip
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


async def test_stripe_events_flow_through_the_pipeline(make_app, aiohttp_client, helpers):
    app = make_app(background=True, providers={"stripe": {"webhook_secret": SECRET}, "slack": {"webhook_secret": SECRET}})
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    await add_connection(app, ws["workspace_id"], "stripe", meta={"stripe_account_id": "acct_9"})
    body = b'{"id":"evt_1","type":"invoice.paid","account":"acct_9"}'
    assert (await client.post("/webhook/stripe", data=body)).status == 401
    ok = await client.post("/webhook/stripe", data=body, headers={"Stripe-Signature": stripe_header(body)})
    assert ok.status == 200

    async def processed():
        rows = await helpers.event_rows(app)
        return rows if rows and rows[0].status != "RECEIVED" else None

    (row,) = await helpers.wait_until(processed)
    assert isinstance(row, WebhookEvent) and row.status == "PROCESSED" and row.workspace_id == ws["workspace_id"] and row.event_type == "invoice.paid"
    # Slack's url_verification is answered in the response and nothing is stored
    challenge = json.dumps({"type": "url_verification", "challenge": "c-1"}).encode()
    ts = str(int(time.time()))
    signature = "v0=" + hmac.new(SECRET.encode(), f"v0:{ts}:".encode() + challenge, hashlib.sha256).hexdigest()
    answer = await client.post("/webhook/slack", data=challenge, headers={"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature})
    assert (await answer.json()) == {"challenge": "c-1"}
    assert len(await helpers.event_rows(app)) == 1
