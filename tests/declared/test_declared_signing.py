"""Declared webhook signatures over a signed string with a timestamp: Stripe's and Calendly's keyed
header (``t=...,v1=...`` over ``{timestamp}.{body}``), Zoom's timestamp header (``v0=`` over
``v0:{timestamp}:{body}``) and Box's ISO 8601 timestamp after the body, each refused outside its
tolerance; the Stripe style agrees with the Stripe pack's own verifier, and a declared handler
answers through ``POST /webhook/{provider}``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import textwrap
import time

import pytest
from multidict import CIMultiDict

from patchbay import Provider, hookimpl
from patchbay.core.declared.loader import parse
from patchbay.core.declared.objects import webhook_handler
from patchbay.core.webhooks.protocol import InboundRequest
from patchbay.providers.stripe.webhooks import StripeWebhooks

SECRET = "whsec_test"
NOW = 1_700_000_000
BODY = b'{"event": "invitee.created", "payload": {"email": "ada@example.com"}}'


def handler_for(verify: str, *, now: float = NOW):
    text = textwrap.dedent(
        f"""
        provider = "acme-signed"

        [webhooks]
        docs = "https://docs.acme.test/webhooks#signatures"
        verify = {verify}
        event_type = "event"

        [[triggers]]
        name = "invitee_created"
        title = "Invitee created"
        docs = "https://docs.acme.test/webhooks#invitee.created"
        kind = "webhook"
        events = ["invitee.created"]
        item = "payload"
        sample = {{ email = "ada@example.com" }}
        """
    )
    handler = webhook_handler(parse(text, "test"))
    handler.clock = lambda: now
    return handler


def request(headers: dict[str, str], body: bytes = BODY) -> InboundRequest:
    return InboundRequest(method="POST", url="https://patchbay.test/webhook/acme-signed", headers=CIMultiDict(headers), query={}, body=body)


def hex_hmac(message: bytes, secret: str = SECRET) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


KEYED = '{ scheme = "hmac", header = "Calendly-Webhook-Signature", signed = "{timestamp}.{body}", signature_key = "v1", timestamp_key = "t", tolerance = 180 }'


def keyed(timestamp: int, body: bytes = BODY, secret: str = SECRET) -> dict[str, str]:
    return {"Calendly-Webhook-Signature": f"t={timestamp},v1={hex_hmac(str(timestamp).encode() + b'.' + body, secret)}"}


def test_a_keyed_header_over_timestamp_and_body():
    handler = handler_for(KEYED)
    assert handler.verify(request(keyed(NOW)), SECRET)
    assert handler.verify(request(keyed(NOW - 180)), SECRET)
    assert not handler.verify(request(keyed(NOW - 181)), SECRET), "outside the tolerance: a replay"
    assert not handler.verify(request(keyed(NOW + 181)), SECRET)
    assert not handler.verify(request(keyed(NOW, secret="other")), SECRET)
    assert not handler.verify(request(keyed(NOW), body=BODY + b" "), SECRET)
    assert not handler.verify(request({"Calendly-Webhook-Signature": keyed(NOW)["Calendly-Webhook-Signature"].replace("t=", "x=")}), SECRET)
    assert not handler.verify(request({"Calendly-Webhook-Signature": f"t=soon,v1={hex_hmac(b'soon.' + BODY)}"}), SECRET)
    assert not handler.verify(request(keyed(NOW)), None)


def test_any_of_several_signatures_may_match_as_during_a_secret_roll():
    handler = handler_for(KEYED)
    good = keyed(NOW)["Calendly-Webhook-Signature"].split(",v1=")[1]
    assert handler.verify(request({"calendly-webhook-signature": f"t={NOW}, v1={'0' * 64}, v1={good}"}), SECRET)
    assert not handler.verify(request({"calendly-webhook-signature": f"t={NOW},v0={good}"}), SECRET)


def test_the_stripe_style_agrees_with_the_stripe_packs_verifier():
    declared = handler_for(KEYED.replace("Calendly-Webhook-Signature", "Stripe-Signature").replace("tolerance = 180", "tolerance = 300"), now=time.time())
    stripe = StripeWebhooks()
    now = int(time.time())
    for headers, expected in [
        ({"Stripe-Signature": keyed(now)["Calendly-Webhook-Signature"]}, True),
        ({"Stripe-Signature": keyed(now - 400)["Calendly-Webhook-Signature"]}, False),
        ({"Stripe-Signature": keyed(now, secret="other")["Calendly-Webhook-Signature"]}, False),
    ]:
        assert declared.verify(request(headers), SECRET) is stripe.verify(request(headers), SECRET) is expected


def test_a_timestamp_header_and_a_prefixed_signature():
    handler = handler_for(
        '{ scheme = "hmac", header = "x-zm-signature", prefix = "v0=", signed = "v0:{timestamp}:{body}", timestamp_header = "x-zm-request-timestamp" }'
    )

    def zoom(timestamp: int) -> dict[str, str]:
        return {"x-zm-request-timestamp": str(timestamp), "x-zm-signature": "v0=" + hex_hmac(f"v0:{timestamp}:".encode() + BODY)}

    assert handler.verify(request(zoom(NOW)), SECRET)
    assert not handler.verify(request(zoom(NOW - 301)), SECRET), "the default tolerance is 300 seconds"
    assert not handler.verify(request({**zoom(NOW), "x-zm-request-timestamp": str(NOW + 1)}), SECRET), "the timestamp is signed"
    assert not handler.verify(request({"x-zm-signature": zoom(NOW)["x-zm-signature"]}), SECRET)


def test_an_iso_timestamp_after_the_body_in_base64():
    handler = handler_for(
        '{ scheme = "hmac", header = "box-signature-primary", encoding = "base64", signed = "{body}{timestamp}", timestamp_header = "box-delivery-timestamp", tolerance = 600 }'
    )

    def box(timestamp: str) -> dict[str, str]:
        digest = hmac.new(SECRET.encode(), BODY + timestamp.encode(), hashlib.sha256).digest()
        return {"box-delivery-timestamp": timestamp, "box-signature-primary": base64.b64encode(digest).decode()}

    assert handler.verify(request(box("2023-11-14T14:13:20-08:00")), SECRET)  # NOW, eight hours west
    assert handler.verify(request(box("2023-11-14T22:23:20Z")), SECRET)
    assert not handler.verify(request(box("2023-11-14T22:03:19Z")), SECRET), "more than ten minutes old"
    assert not handler.verify(request(box("2023-11-14T22:13:20")), SECRET), "a time without its offset is no moment"


def test_the_plain_body_signature_is_unchanged():
    handler = handler_for('{ scheme = "hmac", header = "X-Acme-Signature", prefix = "sha256=" }')
    assert handler.verify(request({"X-Acme-Signature": "sha256=" + hex_hmac(BODY)}), SECRET)
    assert not handler.verify(request({"X-Acme-Signature": hex_hmac(BODY)}), SECRET)


class SignedPack:
    """A provider whose webhooks are verified by a declared ``[webhooks]`` table."""

    @hookimpl
    def register_providers(self):
        definition = {"display_name": "Acme Signed", "category": "productivity", "auth_mode": "api_key", "api_base_url": "https://api.acme.test"}
        return [Provider(name="acme-signed", webhooks=True, capabilities=("proxy", "webhook_receive"), **definition)]

    @hookimpl
    def register_webhooks(self, register):
        register("acme-signed", handler_for(KEYED, now=time.time()))


@pytest.mark.parametrize(("age", "status"), [(0, 200), (600, 401)])
async def test_a_declared_handler_answers_through_the_webhook_endpoint(make_app, aiohttp_client, age, status):
    client = await aiohttp_client(make_app(plugins=[SignedPack()], providers={"acme-signed": {"webhook_secret": SECRET}}))
    answer = await client.post("/webhook/acme-signed", data=BODY, headers=keyed(int(time.time()) - age))
    assert answer.status == status, await answer.text()
    if status == 200:
        assert (await answer.json())["received"] is True
    tampered = await client.post("/webhook/acme-signed", data=BODY.replace(b"ada", b"eve"), headers=keyed(int(time.time())))
    assert tampered.status == 401


def test_events_are_read_as_before():
    (event,) = handler_for(KEYED).events(json.loads(BODY))
    assert (event.type, dict(event.data)) == ("invitee.created", {"email": "ada@example.com"})


def test_a_signature_over_the_body_and_the_url_it_was_posted_to():
    """Trello's scheme: base64 HMAC-SHA1 of the body followed by the callback URL; the same body
    signed for another URL is refused."""
    handler = handler_for('{ scheme = "hmac", header = "x-trello-webhook", algorithm = "sha1", encoding = "base64", signed = "{body}{url}" }')
    url = "https://patchbay.test/webhook/acme-signed"

    def signed_for(target: str) -> str:
        return base64.b64encode(hmac.new(SECRET.encode(), BODY + target.encode(), hashlib.sha1).digest()).decode()

    assert handler.verify(request({"x-trello-webhook": signed_for(url)}), SECRET)
    assert not handler.verify(request({"x-trello-webhook": signed_for("https://elsewhere.test/webhook/acme-signed")}), SECRET)
    assert not handler.verify(request({"x-trello-webhook": base64.b64encode(hmac.new(SECRET.encode(), BODY, hashlib.sha1).digest()).decode()}), SECRET)
