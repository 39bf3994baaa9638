"""The meta pack on its own (``pytest providers/meta``): the pack acceptance suite for each provider it
serves (the definitions come from the catalog pack)."""

import hashlib
import hmac

from patchbay.testing import pack_acceptance


def sign(body: bytes, secret: str, timestamp: int) -> dict[str, str]:
    return {"x-hub-signature-256": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()}


TestAcceptanceFacebook = pack_acceptance("facebook", pack="meta", webhook_signer=sign, webhook_timestamped=False)
