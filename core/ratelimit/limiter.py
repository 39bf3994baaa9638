"""Fixed-window rate limiting on the ``limits`` library's storages: Redis when ``redis_url`` is set
(every process shares the counters), else the database on PostgreSQL (shared too), else process
memory. Limits are written ``"N/minute"`` (``limits``' notation) or ``"off"``.

A key well below its limit does not cost a storage round trip per hit: while the count this process
knows, plus its own hits not yet written, stays within half the limit, hits are counted in process
memory and written to the storage together at most ``SYNC_SECONDS`` later (with the next hit of
the key). From half the limit on, every hit goes to the storage, so the limit itself is exact in one
process; across processes a window may admit, at most, the hits each other process counted in its
last ``SYNC_SECONDS`` and had not yet written.
"""

from __future__ import annotations

import functools
import math
import time
from datetime import UTC, datetime, timedelta

import attrs
import limits
from limits.aio.storage import MemoryStorage, Storage
from limits.storage import storage_from_string
from sqlalchemy import delete, func, select
from sqlalchemy.dialects import postgresql, sqlite

from patchbay.core.ratelimit.models import RateLimitCounter
from patchbay.core.storage.db import Database
from patchbay.core.timeutil import utcnow

#: prefix of every key this service writes to a shared Redis
REDIS_KEY_PREFIX = "patchbay-ratelimit"
#: a key's hits counted in memory are written to the storage at most this long after
SYNC_SECONDS = 1.0
#: local counters kept before the idle ones are dropped (their counts stay in the storage)
MAX_LOCAL_KEYS = 10_000


@attrs.frozen
class Decision:
    allowed: bool
    limit: int
    remaining: int
    retry_after: int  # seconds until the window resets


@functools.lru_cache(maxsize=256)
def parse_limit(text: str) -> limits.RateLimitItem | None:
    """``None`` for ``"off"``. Cached: the throttle parses its setting on every request."""
    return None if text == "off" else limits.parse(text)


class DatabaseStorage(Storage):
    """A ``limits`` storage in the ``rate_limit_counters`` table: one row per key and window, the
    window being ``now // expiry`` so that every process agrees on it."""

    STORAGE_SCHEME = ["patchbay+database"]

    def __init__(self, db: Database) -> None:
        super().__init__()
        self._db = db
        self._insert = postgresql.insert if db.is_postgres else sqlite.insert

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return ()

    async def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        window = int(time.time() // expiry)
        expires_at = datetime.fromtimestamp((window + 1) * expiry, UTC)
        statement = self._insert(RateLimitCounter).values(key=key, window=window, count=amount, expires_at=expires_at)
        statement = statement.on_conflict_do_update(
            index_elements=["key", "window"], set_={"count": RateLimitCounter.count + amount}
        ).returning(RateLimitCounter.count)
        async with self._db.transaction() as session:
            return (await session.execute(statement)).scalar_one()

    async def _current(self, key: str) -> RateLimitCounter | None:
        async with self._db.session() as session:
            statement = (
                select(RateLimitCounter)
                .where(RateLimitCounter.key == key, RateLimitCounter.expires_at > utcnow())
                .order_by(RateLimitCounter.window.desc())
                .limit(1)
            )
            return (await session.execute(statement)).scalar_one_or_none()

    async def get(self, key: str) -> int:
        row = await self._current(key)
        return row.count if row is not None else 0

    async def get_expiry(self, key: str) -> float:
        row = await self._current(key)
        if row is None:
            return time.time()
        expires_at = row.expires_at if row.expires_at.tzinfo else row.expires_at.replace(tzinfo=UTC)
        return expires_at.timestamp()

    async def check(self) -> bool:
        async with self._db.session() as session:
            await session.execute(select(func.count()).select_from(RateLimitCounter).limit(1))
        return True

    async def reset(self) -> int | None:
        async with self._db.transaction() as session:
            return (await session.execute(delete(RateLimitCounter))).rowcount

    async def clear(self, key: str) -> None:
        async with self._db.transaction() as session:
            await session.execute(delete(RateLimitCounter).where(RateLimitCounter.key == key))

    async def purge(self) -> int:
        async with self._db.transaction() as session:
            result = await session.execute(delete(RateLimitCounter).where(RateLimitCounter.expires_at < utcnow() - timedelta(minutes=1)))
            return result.rowcount


def storage_for(db: Database, redis_url: str | None) -> Storage:
    """Redis when configured, else the database on PostgreSQL, else memory."""
    if redis_url:
        return storage_from_string("async+" + redis_url, key_prefix=REDIS_KEY_PREFIX)
    return DatabaseStorage(db) if db.is_postgres else MemoryStorage()


@attrs.define
class _Local:
    """What this process knows of one key's window: the stored count at the last write, its own
    hits since, and when the window ends (epoch seconds)."""

    known: int
    reset: float
    synced_at: float
    pending: int = 0
    #: a write of this key is under way: hits meanwhile wait in memory for the next one
    writing: bool = False


class RateLimiter:
    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._local: dict[str, _Local] = {}

    async def hit(self, key: str, item: limits.RateLimitItem, cost: int = 1) -> Decision:
        """Count ``cost`` against ``item`` for ``key`` (refused hits count too, as in ``limits``'
        fixed window) and say whether the caller is still within the limit."""
        storage_key = item.key_for(key)
        local = self._local.get(storage_key)
        now = time.time()
        if local is not None and now < local.reset and (local.writing or time.monotonic() - local.synced_at < SYNC_SECONDS):
            count = local.known + local.pending + cost
            if count <= item.amount // 2:
                local.pending += cost
                return Decision(True, item.amount, item.amount - count, max(1, math.ceil(local.reset - now)))
        return await self._write(storage_key, item, cost, local, now)

    async def _write(self, storage_key: str, item: limits.RateLimitItem, cost: int, local: _Local | None, now: float) -> Decision:
        """Write this hit and the key's pending ones to the storage; answer from the stored count."""
        carried = local.pending if local is not None and now < local.reset else 0
        if local is not None:
            local.pending -= carried
            local.writing = True
        try:
            count = await self.storage.incr(storage_key, item.get_expiry(), amount=carried + cost)
        finally:
            if local is not None:
                local.writing = False
        current = self._local.get(storage_key)
        if current is None or now >= current.reset or count <= carried + cost:  # a new window
            reset = await self.storage.get_expiry(storage_key)
            current = self._local[storage_key] = _Local(known=count, reset=reset, synced_at=time.monotonic())
            self._prune(now)
        else:
            current.known, current.synced_at = max(current.known, count), time.monotonic()
        return Decision(count <= item.amount, item.amount, max(0, item.amount - count), max(1, math.ceil(current.reset - time.time())))

    def _prune(self, now: float) -> None:
        if len(self._local) > MAX_LOCAL_KEYS:
            self._local = {key: local for key, local in self._local.items() if local.pending and now < local.reset}

    async def purge(self) -> int:
        """Delete expired counter rows (the database storage); the others expire on their own."""
        return await self.storage.purge() if isinstance(self.storage, DatabaseStorage) else 0
