"""Twilio's webhook scheme: the signature over the URL and the sorted form parameters, and an incoming
message read from its form (the whole pipeline over HTTP: tests/flows/test_flows_twilio_trigger.py)."""

from __future__ import annotations

from urllib.parse import urlencode

from multidict import CIMultiDict

from patchbay import InboundRequest
from patchbay.providers.twilio.webhooks import INCOMING_MESSAGE, TwilioWebhooks, twilio_signature

# the example of Twilio's security docs (https://www.twilio.com/docs/usage/webhooks/webhooks-security)
DOCS_URL = "https://mycompany.com/myapp.php?foo=1&bar=2"
DOCS_PARAMS = {"CallSid": "CA1234567890ABCDE", "Caller": "+12349013030", "Digits": "1234", "From": "+12349013030", "To": "+18005551212"}
DOCS_TOKEN = "12345"
DOCS_SIGNATURE = "0/KCTR6DLpKmkAf8muzZqo1nDgQ="


def request(body: bytes, signature: str | None, url: str = DOCS_URL) -> InboundRequest:
    headers = CIMultiDict({"X-Twilio-Signature": signature} if signature is not None else {})
    return InboundRequest(method="POST", url=url, headers=headers, query={}, body=body)


def test_the_signature_of_twilios_docs_example_whatever_the_order_of_the_form():
    assert twilio_signature(DOCS_TOKEN, DOCS_URL, DOCS_PARAMS.items()) == DOCS_SIGNATURE
    body = urlencode(dict(reversed(DOCS_PARAMS.items()))).encode()
    twilio = TwilioWebhooks()
    assert twilio.verify(request(body, DOCS_SIGNATURE), DOCS_TOKEN)
    assert not twilio.verify(request(body, DOCS_SIGNATURE), "54321")
    assert not twilio.verify(request(body, DOCS_SIGNATURE, url=DOCS_URL.replace("https", "http")), DOCS_TOKEN)
    assert not twilio.verify(request(body + b"&Digits=9", DOCS_SIGNATURE), DOCS_TOKEN)
    assert not twilio.verify(request(body, None), DOCS_TOKEN)
    assert not twilio.verify(request(body, DOCS_SIGNATURE), None)


def test_a_repeated_parameter_signs_each_of_its_values_sorted():
    params = [("MediaUrl", "https://b.example"), ("Body", "x"), ("MediaUrl", "https://a.example")]
    assert twilio_signature("t", "https://h/", params) == twilio_signature("t", "https://h/", sorted(params))


def test_a_body_that_is_not_utf8_is_refused():
    assert not TwilioWebhooks().verify(request(b"Body=\xff", twilio_signature(DOCS_TOKEN, DOCS_URL, [("Body", "\ufffd")])), DOCS_TOKEN)


def test_an_incoming_message_is_one_event_and_a_status_callback_none():
    twilio = TwilioWebhooks()
    message = {"MessageSid": "SM1", "AccountSid": "AC1", "From": "+1", "To": "+2", "Body": "hi & bye", "NumMedia": "0"}
    payload = twilio.payload(urlencode(message))
    (event,) = twilio.events(payload)
    assert (event.type, event.external_id, dict(event.data)) == (INCOMING_MESSAGE, "SM1", message)
    assert list(twilio.routing_keys(event)) == [("account_sid", "AC1")]
    assert twilio.events(twilio.payload(urlencode({"MessageSid": "SM1", "MessageStatus": "delivered"}))) == []
    assert twilio.events(twilio.payload('{"MessageSid": "SM1"}')) == []
