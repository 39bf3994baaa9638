"""RSA signing keys of the identity provider, stored encrypted, rotated by ``patchbay keys rotate``.

The JWKS publishes the current and the previous key, so tokens signed before a rotation verify until
they expire. Other processes pick up a rotation on their next reload (at most ``RELOAD_SECONDS``
later, or at once when a token names a kid they have not seen). Signing runs in a thread:
``cryptography`` releases the GIL, so both cores sign.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, RSAKey
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from patchbay.core.security.models import SigningKey
from patchbay.core.security.secrets import SecretBox, random_token
from patchbay.core.storage.db import Database

RELOAD_SECONDS = 60
ALGORITHM = "RS256"


class InvalidToken(ValueError):
    """A JWT is malformed, signed by an unknown key, or its signature does not verify."""


class SigningKeys:
    def __init__(self, db: Database, box: SecretBox) -> None:
        self._db = db
        self._box = box
        self._current: RSAKey | None = None
        self._public = KeySet([])
        self._jwks: dict[str, Any] = {"keys": []}
        self._loaded_at = 0.0
        self._forced_reload_at = 0.0

    async def ensure(self) -> None:
        """Create the first key if there is none, then load."""
        try:
            async with self._db.transaction() as session:
                exists = await session.scalar(select(SigningKey.kid).where(SigningKey.status == "current").limit(1))
                if exists is None:
                    session.add(self._new_key_row())
        except IntegrityError:
            pass  # another process created the first key at the same moment; the index keeps one
        await self.load()

    async def rotate(self) -> str:
        """Make a new current key; the old current becomes previous, the old previous retires."""
        async with self._db.transaction() as session:
            await session.execute(update(SigningKey).where(SigningKey.status == "previous").values(status="retired"))
            await session.execute(update(SigningKey).where(SigningKey.status == "current").values(status="previous"))
            row = self._new_key_row()
            session.add(row)
        await self.load()
        return row.kid

    def _new_key_row(self) -> SigningKey:
        kid = random_token(12)
        key = RSAKey.generate_key(2048, parameters={"kid": kid, "alg": ALGORITHM, "use": "sig"})
        return SigningKey(
            kid=kid,
            private_key=self._box.encrypt(key.as_pem(private=True).decode()),
            public_jwk=key.as_dict(private=False),
            status="current",
        )

    async def load(self) -> None:
        async with self._db.session() as session:
            rows = (await session.scalars(select(SigningKey).where(SigningKey.status.in_(("current", "previous"))))).all()
        current = next((row for row in rows if row.status == "current"), None)
        if current is not None:
            pem = self._box.decrypt(current.private_key)
            self._current = RSAKey.import_key(pem, parameters={"kid": current.kid, "alg": ALGORITHM, "use": "sig"})
        public = [dict(row.public_jwk, kid=row.kid, alg=ALGORITHM, use="sig") for row in sorted(rows, key=lambda r: r.status)]
        self._jwks = {"keys": public}
        self._public = KeySet.import_key_set({"keys": public})
        self._loaded_at = time.monotonic()

    async def _fresh(self) -> None:
        if time.monotonic() - self._loaded_at > RELOAD_SECONDS:
            await self.load()

    async def jwks(self) -> dict[str, Any]:
        await self._fresh()
        return self._jwks

    @property
    def current_kid(self) -> str | None:
        return self._current.kid if self._current else None

    async def sign(self, claims: dict[str, Any], *, typ: str = "JWT") -> str:
        await self._fresh()
        return await asyncio.to_thread(self.sign_blocking, claims, typ=typ)

    def sign_blocking(self, claims: dict[str, Any], *, typ: str = "JWT") -> str:
        """Sign on the calling thread with the key loaded last: for code already running off the
        event loop (the identity provider runs authlib's synchronous grants in a thread)."""
        key = self._current
        if key is None:
            raise RuntimeError("no signing key: run `patchbay keys rotate` or start the server once")
        header = {"alg": ALGORITHM, "kid": key.kid, "typ": typ}
        return jwt.encode(header, claims, key)

    async def refresh(self) -> None:
        """Reload the keys when they are older than ``RELOAD_SECONDS`` (before ``sign_blocking``)."""
        await self._fresh()

    async def verify(self, token: str) -> dict[str, Any]:
        """The claims of a token signed by one of our keys (expiry and issuer are the caller's)."""
        await self._fresh()
        try:
            return self._decode(token)
        except InvalidToken:
            if time.monotonic() - self._forced_reload_at < 1:  # forged kids must not hammer the database
                raise
            self._forced_reload_at = time.monotonic()
            await self.load()  # a key rotated by another process
            return self._decode(token)

    def _decode(self, token: str) -> dict[str, Any]:
        try:
            return dict(jwt.decode(token, self._public, algorithms=[ALGORITHM]).claims)
        except (JoseError, ValueError) as error:
            raise InvalidToken(str(error) or type(error).__name__) from None
