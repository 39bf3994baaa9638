"""RSA signing keys of the identity provider, stored encrypted, rotated by ``patchbay keys rotate``.

The JWKS publishes the current and the previous key, so tokens signed before a rotation verify until
they expire. Other processes pick up a rotation on their next reload (at most ``RELOAD_SECONDS``
later, or at once when a token names a kid they have not seen).

A JWT is built in two steps so that only the RSA signature leaves the event loop: :meth:`SigningKeys.prepare`
makes the signing input (header and claims, on the caller's thread) and :meth:`SigningKeys.finish`
signs it on the keys' own threads (``cryptography`` releases the GIL while signing, so both cores
sign while the loop serves the next requests). joserfc signs a JWS only in one call that also
encodes it, hence the compact serialization is assembled here; verification is joserfc's.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import queue
import threading
import time
import weakref
from typing import Any

import attrs
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, RSAKey
from joserfc.util import json_b64encode, urlsafe_b64encode
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from patchbay.core.security.models import SigningKey
from patchbay.core.security.secrets import SecretBox, random_token
from patchbay.core.storage.db import Database

RELOAD_SECONDS = 60
ALGORITHM = "RS256"
#: tokens whose signature this process remembers having verified with the keys loaded last
VERIFIED_TOKENS = 4096


class InvalidToken(ValueError):
    """A JWT is malformed, signed by an unknown key, or its signature does not verify."""


@attrs.frozen
class UnsignedJWT:
    """A JWT's signing input (``header.claims``, base64url) and the key that is to sign it."""

    signing_input: bytes
    private_key: rsa.RSAPrivateKey

    def sign(self) -> str:
        """The compact JWT: RS256 (RSASSA-PKCS1-v1_5 with SHA-256) over the signing input."""
        signature = self.private_key.sign(self.signing_input, _PKCS1, _SHA256)
        return (self.signing_input + b"." + urlsafe_b64encode(signature)).decode()


_PKCS1 = padding.PKCS1v15()
_SHA256 = hashes.SHA256()
#: one encoder for every payload: ``json.dumps`` with options builds a new encoder per call
_CLAIMS_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class _Inbox:
    """Signatures finished for one event loop, handed to it in one wake-up however many finished
    meanwhile."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._done: collections.deque[tuple[asyncio.Future[str], str | None, BaseException | None]] = collections.deque()
        self._scheduled = False

    def put(self, future: asyncio.Future[str], result: str | None, error: BaseException | None) -> None:
        """From a signing thread."""
        self._done.append((future, result, error))
        if not self._scheduled:
            self._scheduled = True
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        self._scheduled = False  # first: a signature finished from now on schedules another drain
        while self._done:
            future, result, error = self._done.popleft()
            if future.cancelled():
                continue
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)


class SigningThreads:
    """Threads that only sign, one per core (a signature holds a core for about 0.3 ms without the
    GIL; more threads than cores would only queue). A job is a queue entry and the answer one
    entry of its loop's inbox: a ``concurrent.futures`` executor costs a Future, locks and a loop
    wake-up per signature, Python work that holds the GIL the event loop is waiting for.

    The threads start with the first signature and stop at :meth:`close` (a signature asked for
    after it starts them again)."""

    def __init__(self, count: int) -> None:
        self._count = count
        self._jobs: queue.SimpleQueue[tuple[_Inbox, asyncio.Future[str], UnsignedJWT] | None] = queue.SimpleQueue()
        self._inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Inbox] = weakref.WeakKeyDictionary()
        self._last_inbox: _Inbox | None = None
        self._threads: list[threading.Thread] = []
        self._starting = threading.Lock()

    def sign(self, unsigned: UnsignedJWT) -> asyncio.Future[str]:
        loop = asyncio.get_running_loop()
        if not self._threads:
            self._start()
        inbox = self._last_inbox  # one loop per process serves: skip the weak mapping's lookup
        if inbox is None or inbox._loop is not loop:
            inbox = self._inboxes.get(loop)
            if inbox is None:
                inbox = self._inboxes[loop] = _Inbox(loop)
            self._last_inbox = inbox
        future = loop.create_future()
        self._jobs.put((inbox, future, unsigned))
        return future

    def _start(self) -> None:
        with self._starting:
            if not self._threads:
                threads = [threading.Thread(target=self._work, name=f"patchbay-sign-{number}", daemon=True) for number in range(self._count)]
                for thread in threads:
                    thread.start()
                self._threads = threads

    def close(self) -> None:
        """Stop the threads once they have signed what was asked before."""
        with self._starting:
            threads, self._threads = self._threads, []
            for _ in threads:
                self._jobs.put(None)
        for thread in threads:
            thread.join()

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            inbox, future, unsigned = job
            try:
                inbox.put(future, unsigned.sign(), None)
            except Exception as error:  # noqa: BLE001 (the waiting request gets it)
                inbox.put(future, None, error)


@attrs.frozen
class _CurrentKey:
    kid: str
    private: rsa.RSAPrivateKey
    headers: dict[str, bytes] = attrs.field(factory=dict)  # its base64url JWS header, by ``typ``


class SigningKeys:
    def __init__(self, db: Database, box: SecretBox) -> None:
        self._db = db
        self._box = box
        self._current: _CurrentKey | None = None
        self._public = KeySet([])
        self._jwks: dict[str, Any] = {"keys": []}
        self._loaded_at = 0.0
        self._forced_reload_at = 0.0
        self._threads = SigningThreads(os.cpu_count() or 1)
        #: token -> its claims, for tokens that verified with the keys loaded last
        self._verified: dict[str, dict[str, Any]] = {}

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
        if current is not None and (self._current is None or self._current.kid != current.kid):  # parsed once per key
            key = RSAKey.import_key(self._box.decrypt(current.private_key), parameters={"kid": current.kid, "alg": ALGORITHM, "use": "sig"})
            self._current = _CurrentKey(current.kid, key.get_op_key("sign"))  # one assignment: signing threads read it
        public = [dict(row.public_jwk, kid=row.kid, alg=ALGORITHM, use="sig") for row in sorted(rows, key=lambda r: r.status)]
        self._jwks = {"keys": public}
        self._public = KeySet.import_key_set({"keys": public})
        self._verified = {}  # a key no longer loaded verifies nothing, remembered or not
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
        return await self.finish(self.prepare(claims, typ=typ))

    def prepare(self, claims: dict[str, Any], *, typ: str = "JWT") -> UnsignedJWT:
        """The signing input of ``claims`` under the key loaded last (no signature yet)."""
        return self.prepare_encoded(_CLAIMS_JSON(claims).encode(), typ=typ)

    def prepare_encoded(self, payload: bytes, *, typ: str = "JWT") -> UnsignedJWT:
        """:meth:`prepare` of claims already encoded as a JSON object (UTF-8)."""
        key = self._current
        if key is None:
            raise RuntimeError("no signing key: run `patchbay keys rotate` or start the server once")
        header = key.headers.get(typ)
        if header is None:
            header = key.headers[typ] = json_b64encode({"typ": typ, "alg": ALGORITHM, "kid": key.kid})
        return UnsignedJWT(header + b"." + urlsafe_b64encode(payload), key.private)

    async def finish(self, unsigned: UnsignedJWT) -> str:
        """Sign ``unsigned`` on a signing thread; the event loop serves other requests meanwhile."""
        return await self._threads.sign(unsigned)

    def close(self) -> None:
        """Stop the signing threads (:meth:`finish` starts them again when asked)."""
        self._threads.close()

    def sign_blocking(self, claims: dict[str, Any], *, typ: str = "JWT") -> str:
        """Sign on the calling thread with the key loaded last: for code already running off the
        event loop (authlib's code and refresh grants run in a thread)."""
        return self.prepare(claims, typ=typ).sign()

    async def refresh(self) -> None:
        """Reload the keys when they are older than ``RELOAD_SECONDS`` (before ``sign_blocking``)."""
        await self._fresh()

    async def verify(self, token: str) -> dict[str, Any]:
        """The claims of a token signed by one of our keys (expiry and issuer are the caller's).

        A token that verified is remembered, its exact text mapped to its claims, until the keys
        are loaded again (every ``RELOAD_SECONDS``, or on a kid not seen yet): a client sending the
        same access token on every call pays the RSA verification and the JWT parsing once a
        minute, not per call. Only a token verified before, byte for byte, is answered from memory;
        a refused token is checked again every time."""
        await self._fresh()
        claims = self._verified.get(token)
        if claims is None:
            try:
                claims = self._decode(token)
            except InvalidToken:
                if time.monotonic() - self._forced_reload_at < 1:  # forged kids must not hammer the database
                    raise
                self._forced_reload_at = time.monotonic()
                await self.load()  # a key rotated by another process
                claims = self._decode(token)
            if len(self._verified) >= VERIFIED_TOKENS:
                self._verified.clear()
            self._verified[token] = claims
        return dict(claims)  # the caller's own copy: the remembered claims stay as verified

    def _decode(self, token: str) -> dict[str, Any]:
        try:
            return dict(jwt.decode(token, self._public, algorithms=[ALGORITHM]).claims)
        except (JoseError, ValueError) as error:
            raise InvalidToken(str(error) or type(error).__name__) from None
