"""Fixed-window rate limiting on the ``limits`` library's storages: Redis when ``redis_url`` is set
(every process shares the counters), else the database on PostgreSQL (shared too), else process
memory on SQLite, or the SQLite file when ``patchbay serve`` runs several processes. Limits are written ``"N/minute"`` (``limits``' notation) or ``"off"``.

A key well below its limit does not cost a storage round trip per hit: while the stored count stays
within half the limit, a write also reserves a block of ``1/RESERVE_SHARE`` of the limit for this
process, and the next hits take from the block in memory. Reserved hits are counted in the storage
before they are used, so no process ever admits more than the limit; the part of a block still unused
when its window ends was counted without being used (at most ``1/RESERVE_SHARE`` of the limit per
process and key). From half the limit on, every hit is written.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
import typing
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
#: below half its limit, a key's write reserves this fraction (1/N) of the limit for this process
RESERVE_SHARE = 20
#: blocks kept before the used-up ones are dropped
MAX_LOCAL_KEYS = 10_000


class Decision(typing.NamedTuple):
    """A limit's answer to one hit (a tuple: made on every request, cheaper than an attrs object)."""

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
        statement = statement.on_conflict_do_update(index_elements=["key", "window"], set_={"count": RateLimitCounter.count + amount}).returning(
            RateLimitCounter.count
        )
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


def storage_for(db: Database, redis_url: str | None, *, processes: int = 1) -> Storage:
    """Redis when configured, else the database on PostgreSQL, else memory on SQLite, unless
    several ``processes`` of one server share the SQLite file: then that file too, or each process
    would admit the whole limit."""
    if redis_url:
        return storage_from_string("async+" + redis_url, key_prefix=REDIS_KEY_PREFIX)
    return DatabaseStorage(db) if db.is_postgres or processes > 1 else MemoryStorage()


@attrs.define
class _Block:
    """Hits of one key's window this process reserved in the storage and has not used yet."""

    reset: float  # when the window ends (epoch seconds)
    stored: int  # the stored count after the write that reserved them
    left: int


class RateLimiter:
    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._blocks: dict[str, _Block] = {}
        #: reserving writes under way: hits meanwhile wait for their block instead of writing too
        self._reserving: dict[str, asyncio.Future] = {}
        #: id(item) -> (item, {key: storage key}): the item is held, so its id names no other object
        #: meanwhile, and found without its ``__hash__`` (Python code hashing four fields)
        self._storage_keys: dict[int, tuple[limits.RateLimitItem, dict[str, str]]] = {}

    def take_reserved(self, key: str, item: limits.RateLimitItem, cost: int = 1) -> bool:
        """Take ``cost`` hits of ``item`` for ``key`` from this process's reserved block when it
        still holds them: True then, the hit counted and allowed (nothing awaited, no storage round
        trip). False leaves the decision to :meth:`hit`. For callers that need only the yes, on
        every request."""
        return self._take(self._storage_key(key, item), cost, time.time()) is not None

    def _take(self, storage_key: str, cost: int, now: float) -> _Block | None:
        """The key's reserved block after taking ``cost`` hits from it, when its window is still
        open and it holds them; else None, nothing taken."""
        block = self._blocks.get(storage_key)
        if block is not None and now < block.reset and block.left >= cost:
            block.left -= cost
            return block
        return None

    async def hit(self, key: str, item: limits.RateLimitItem, cost: int = 1) -> Decision:
        """Count ``cost`` against ``item`` for ``key`` (refused hits count too, as in ``limits``'
        fixed window) and say whether the caller is still within the limit."""
        storage_key = self._storage_key(key, item)
        while True:
            now = time.time()
            block = self._take(storage_key, cost, now)
            if block is not None:
                # the window has not ended: its ceiling is at least one second
                return Decision(True, item.amount, max(0, item.amount - block.stored + block.left), math.ceil(block.reset - now))
            reserving = self._reserving.get(storage_key)
            if reserving is None:
                return await self._write(storage_key, item, cost, self._blocks.get(storage_key), now)
            await asyncio.shield(reserving)

    async def _write(self, storage_key: str, item: limits.RateLimitItem, cost: int, block: _Block | None, now: float) -> Decision:
        """Write this hit, with a block of hits to come while the key is well below its limit."""
        same_window = block is not None and now < block.reset
        share = item.amount // RESERVE_SHARE
        extra = share if share > cost and (block.stored if same_window else 0) + cost + share <= item.amount // 2 else 0
        if extra:
            self._reserving[storage_key] = asyncio.get_running_loop().create_future()
        try:
            count = await self.storage.incr(storage_key, item.get_expiry(), amount=cost + extra)
            before = count - cost - extra
            reset = block.reset if same_window and before > 0 else await self.storage.get_expiry(storage_key)
        finally:
            if extra:
                self._reserving.pop(storage_key).set_result(None)
        allowed = before + cost <= item.amount
        left = max(0, min(extra, item.amount - before - cost)) if allowed else 0
        self._blocks[storage_key] = _Block(reset=reset, stored=count, left=left)
        self._prune(now)
        return Decision(allowed, item.amount, max(0, item.amount - (count - left)), max(1, math.ceil(reset - time.time())))

    def _storage_key(self, key: str, item: limits.RateLimitItem) -> str:
        """``item.key_for(key)``, remembered: the throttle asks for the same few keys on every request."""
        known = self._storage_keys.get(id(item))
        if known is not None and known[0] is item:
            storage_key = known[1].get(key)
            if storage_key is not None:
                return storage_key
        else:
            if len(self._storage_keys) > MAX_LOCAL_KEYS:
                self._storage_keys.clear()
            known = self._storage_keys[id(item)] = (item, {})
        keys = known[1]
        if len(keys) > MAX_LOCAL_KEYS:
            keys.clear()
        storage_key = keys[key] = item.key_for(key)
        return storage_key

    def _prune(self, now: float) -> None:
        if len(self._blocks) > MAX_LOCAL_KEYS:
            self._blocks = {key: block for key, block in self._blocks.items() if block.left and now < block.reset}

    async def purge(self) -> int:
        """Delete expired counter rows (the database storage); the others expire on their own."""
        return await self.storage.purge() if isinstance(self.storage, DatabaseStorage) else 0
