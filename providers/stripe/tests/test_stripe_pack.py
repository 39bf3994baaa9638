"""The stripe pack on its own (``pytest providers/stripe``): the pack acceptance suite for each provider it
serves (the definitions come from the catalog pack)."""

import hashlib
import hmac

from patchbay.testing import pack_acceptance


def sign(body: bytes, secret: str, timestamp: int) -> dict[str, str]:
    digest = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    return {"Stripe-Signature": f"t={timestamp},v1={digest}"}


TestAcceptanceStripe = pack_acceptance("stripe", webhook_signer=sign)
TestAcceptanceStripeApiKey = pack_acceptance("stripe-api-key", pack="stripe")
