"""Stripe's webhook scheme: signature, timestamp window and Connect routing."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

from multidict import CIMultiDict

from patchbay import InboundRequest
from patchbay.providers.stripe.webhooks import StripeWebhooks

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
