"""Signatures of forwarded events: ``X-Connect-Signature`` (spec 6.3) and the Standard Webhooks
headers (``webhook-id``, ``webhook-timestamp``, ``webhook-signature``)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets as _random

SECRET_PREFIX = "whsec_"


def generate_secret(nbytes: int = 24) -> str:
    """A new signing secret in the Standard Webhooks form, ``whsec_<standard base64>``, which the
    specification's libraries decode to the HMAC key. (Secrets generated before this were
    ``whsec_<URL-safe text>``: those that do not decode keep signing with their UTF-8 bytes, as
    they always did; rotating the secret gives one the libraries accept.)"""
    return SECRET_PREFIX + base64.b64encode(_random.token_bytes(nbytes)).decode()


def connect_signature(secret: str, body: bytes) -> str:
    """Hex HMAC-SHA256 of the raw body keyed with the callbackSecret (spec 6.3)."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def standard_key(secret: str) -> bytes:
    """The HMAC key of a secret under Standard Webhooks: a ``whsec_<base64>`` secret is its decoded
    bytes (as the specification's libraries expect); any other secret is its UTF-8 bytes."""
    if secret.startswith(SECRET_PREFIX):
        try:
            return base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            pass
    return secret.encode()


def standard_signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256 of "id.timestamp.body">``."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(standard_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signature_headers(secrets: list[str], message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The signing headers for ``secrets`` (current first, then the one being rotated out)."""
    if not secrets:
        return {}
    headers = {
        "X-Connect-Signature": connect_signature(secrets[0], body),
        "webhook-signature": " ".join(standard_signature(secret, message_id, timestamp, body) for secret in secrets),
    }
    if len(secrets) > 1:
        headers["X-Connect-Signature-Previous"] = connect_signature(secrets[1], body)
    return headers
