"""Encryption of stored secrets and keyed digests, from ``PATCHBAY_SECRET_KEY``.

The setting is a list of secrets; the first encrypts, all of them decrypt, so a key is rotated by
putting a new one first. Each secret may be any string: Fernet keys (AES-128-CBC with
HMAC-SHA256, authenticated) and digest keys are derived from it with HKDF. Digests
(``digest``) are HMAC-SHA256 of high-entropy values (API keys, client secrets, refresh tokens) and are
checked against every key too.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import secrets as _random
import string
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

log = logging.getLogger(__name__)

SECRET_FILE = "secret.key"


class DecryptionError(ValueError):
    """A stored value cannot be decrypted with any configured key."""


def _derive(secret: str, purpose: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"patchbay", info=purpose).derive(secret.encode())


def _mac(key: bytes, message: bytes) -> str:
    return base64.urlsafe_b64encode(hmac.new(key, message, hashlib.sha256).digest()).rstrip(b"=").decode()


class SecretBox:
    def __init__(self, secrets: list[str]) -> None:
        if not secrets:
            raise ValueError("at least one secret key is needed")
        self._fernet = MultiFernet([Fernet(base64.urlsafe_b64encode(_derive(s, b"encryption"))) for s in secrets])
        self._digest_keys = [_derive(s, b"digest") for s in secrets]
        self._signing_keys = [_derive(s, b"signing") for s in secrets]

    def encrypt(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken:
            raise DecryptionError("stored secret cannot be decrypted with the configured keys") from None

    def rotate(self, token: str) -> str:
        """Re-encrypt ``token`` with the first key."""
        return self._fernet.rotate(token.encode()).decode()

    def digest(self, value: str) -> str:
        """The hex HMAC-SHA256 of ``value`` under the first key (what is stored)."""
        return hmac.new(self._digest_keys[0], value.encode(), hashlib.sha256).hexdigest()

    def digests(self, value: str) -> list[str]:
        """The digest of ``value`` under every key: look a stored digest up with ``IN``."""
        return [hmac.new(key, value.encode(), hashlib.sha256).hexdigest() for key in self._digest_keys]

    def sign(self, message: bytes) -> str:
        """A url-safe HMAC of ``message`` under the first key, for short-lived signed values (OAuth
        state, CSRF)."""
        return _mac(self._signing_keys[0], message)

    def verify_signature(self, message: bytes, signature: str) -> bool:
        """Whether ``signature`` is the HMAC of ``message`` under any configured key (a signature
        that is not ASCII is none: ``compare_digest`` refuses to compare such text)."""
        return signature.isascii() and any(hmac.compare_digest(_mac(key, message), signature) for key in self._signing_keys)


def load_or_create_secrets(configured: list[str], data_dir: Path) -> list[str]:
    """The configured secrets, or the development secret kept in the data dir (created with a
    warning on first use)."""
    if configured:
        return configured
    path = data_dir / SECRET_FILE
    if path.exists():
        return [path.read_text().strip()]
    data_dir.mkdir(parents=True, exist_ok=True)
    secret = _random.token_urlsafe(32)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # private from its first byte
    with os.fdopen(descriptor, "w") as file:
        file.write(secret + "\n")
    log.warning("PATCHBAY_SECRET_KEY is not set: generated one into %s; set it explicitly in production", path)
    return [secret]


def random_token(nbytes: int = 32) -> str:
    return _random.token_urlsafe(nbytes)


IDENTIFIER_ALPHABET = string.ascii_letters + string.digits


def random_identifier(length: int = 24) -> str:
    """A random identifier that people copy into commands and URLs: letters and digits only, so it
    never starts with ``-`` (which a command line reads as an option) nor needs quoting
    (``length`` 24 holds about 143 bits)."""
    return "".join(_random.choice(IDENTIFIER_ALPHABET) for _ in range(length))
