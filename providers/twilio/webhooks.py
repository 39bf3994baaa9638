"""Twilio's webhook scheme (https://www.twilio.com/docs/usage/webhooks/webhooks-security): a form-encoded
POST signed with ``X-Twilio-Signature``, the base64 HMAC-SHA1, under the account's Auth Token (``webhook_secret``
of ``[providers.twilio]``), of the URL Twilio called followed by every POST parameter, sorted by name, each name
then its value. The URL is the deployment's public one (``InboundRequest.url``: the ``base_url`` setting and the
path and query as sent), never the caller's Host header.

An incoming message (https://www.twilio.com/docs/messaging/guides/webhook-request: MessageSid, AccountSid, From,
To, Body, NumMedia, ...) is the event :data:`INCOMING_MESSAGE`, Twilio's name for it in its event types
(https://www.twilio.com/docs/events/event-types/messaging/inbound-message); its data is the parameters as sent.
A JSON delivery (Twilio's bodySHA256 scheme) is not a form and is refused."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections import defaultdict
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl

from patchbay import InboundEvent, WebhookHandler, signatures_match

SIGNATURE_HEADER = "X-Twilio-Signature"
INCOMING_MESSAGE = "com.twilio.messaging.inbound-message.received"


def form_params(body: str) -> list[tuple[str, str]]:
    """The parameters of a form body, empty values kept (Twilio signs them too)."""
    return parse_qsl(body, keep_blank_values=True)


def twilio_signature(auth_token: str, url: str, params: Iterable[tuple[str, str]]) -> str:
    """What ``X-Twilio-Signature`` carries for a POST of ``params`` to ``url``: names sorted, a repeated
    name's distinct values sorted, as Twilio's own libraries compute it."""
    values: dict[str, set[str]] = defaultdict(set)
    for name, value in params:
        values[name].add(value)
    signed = url + "".join(name + value for name in sorted(values) for value in sorted(values[name]))
    digest = hmac.new(auth_token.encode(), signed.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


class TwilioWebhooks(WebhookHandler):
    """Verifies ``X-Twilio-Signature`` over the public URL and the form; reads an incoming message as
    one :data:`INCOMING_MESSAGE` event keyed by its MessageSid and routed by AccountSid to the
    connection whose metadata ``account_sid`` matches. Status callbacks (with ``MessageStatus``)
    carry no event."""

    routing_metadata_keys = ("account_sid",)

    def verify(self, request, secret):
        given = request.headers.get(SIGNATURE_HEADER, "")
        if not secret or not given:
            return False
        try:
            params = form_params(request.body.decode("utf-8"))
        except UnicodeDecodeError:
            return False
        return signatures_match(twilio_signature(secret, request.url, params), given)

    def payload(self, body: str) -> dict[str, str]:
        """The form's parameters (a repeated name keeps its last value)."""
        return dict(form_params(body))

    def events(self, payload):
        if not isinstance(payload, Mapping) or not payload.get("MessageSid") or "MessageStatus" in payload:
            return []
        return [InboundEvent(type=INCOMING_MESSAGE, data=payload, external_id=payload["MessageSid"])]

    def routing_keys(self, event):
        account = event.data.get("AccountSid")
        return [("account_sid", str(account))] if account else []
