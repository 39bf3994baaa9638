"""The twilio pack on its own (``pytest providers/twilio``): the pack acceptance suite, its webhook
verification signing as Twilio does (no timestamp: Twilio's scheme has none)."""

from urllib.parse import parse_qsl

from patchbay.providers.twilio.webhooks import twilio_signature
from patchbay.testing import pack_acceptance

#: the URL the suite's deliveries are posted to (``check_webhook_verification``)
SUITE_URL = "https://patchbay.test/webhook/twilio"


def sign(body: bytes, secret: str, timestamp: int) -> dict[str, str]:
    return {"X-Twilio-Signature": twilio_signature(secret, SUITE_URL, parse_qsl(body.decode(), keep_blank_values=True))}


TestAcceptanceTwilio = pack_acceptance("twilio", webhook_signer=sign, webhook_timestamped=False)
