"""The slack pack on its own (``pytest providers/slack``): the pack acceptance suite for each provider it
serves (the definitions come from the catalog pack)."""

import hashlib
import hmac

from patchbay.testing import pack_acceptance


def sign(body: bytes, secret: str, timestamp: int) -> dict[str, str]:
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Signature": f"v0={digest}", "X-Slack-Request-Timestamp": str(timestamp)}


TestAcceptanceSlack = pack_acceptance("slack", webhook_signer=sign)
