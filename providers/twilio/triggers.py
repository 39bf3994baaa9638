"""Twilio's webhook trigger: an incoming message, as :mod:`.webhooks` reads it."""

from __future__ import annotations

from patchbay import Trigger
from patchbay.providers.twilio.webhooks import INCOMING_MESSAGE

#: an incoming SMS as Twilio's docs show its request parameters (fake SIDs and numbers)
SAMPLE = {
    "MessageSid": "SMaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "SmsSid": "SMaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "AccountSid": "ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "MessagingServiceSid": "MGaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "From": "+14017122661",
    "To": "+15558675310",
    "Body": "Ahoy! We can't wait to see what you build.",
    "NumMedia": "0",
    "NumSegments": "1",
}

INCOMING_MESSAGE_TRIGGER = Trigger(
    name="incoming_message",
    display_name="Incoming message",
    kind="webhook",
    description=(
        "An SMS, MMS or channel message arrived at one of the account's numbers (the number's or Messaging Service's "
        "incoming message webhook set to this deployment's /webhook/twilio URL): the request parameters "
        "Twilio sent, MessageSid, From, To, Body, NumMedia and the rest."
    ),
    event_types=(INCOMING_MESSAGE,),
    sample=SAMPLE,
    docs_url="https://www.twilio.com/docs/messaging/guides/webhook-request",
)


def triggers() -> list[Trigger]:
    return [INCOMING_MESSAGE_TRIGGER]
