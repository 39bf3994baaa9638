"""Fixed-window rate limiting with two backends: in memory (one process) and in the database
(every process sharing the counters). Limits are written ``"N/minute"`` (``limits``' notation) or
``"off"``."""

from __future__ import annotations

import asyncio
import functools
import math
import time
from datetime import UTC, datetime, timedelta

import attrs
import limits
from sqlalchemy import delete
from sqlalchemy.dialects import postgresql, sqlite

from patchbay.core.ratelimit.models import RateLimitCounter
from patchbay.core.storage.db import Database
from patchbay.core.timeutil import utcnow


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


class MemoryBackend:
    def __init__(self) -> None:
        self._counts: dict[tuple[str, int], int] = {}
        self._lock = asyncio.Lock()

    async def incr(self, key: str, window: int, expires_at: float) -> int:
        slot = (key, window)
        count = self._counts.get(slot, 0) + 1
        self._counts[slot] = count
        if len(self._counts) > 100_000:
            current = int(time.time())
            self._counts = {k: v for k, v in self._counts.items() if k[1] >= current - 3600}
        return count

    async def purge(self) -> int:
        return 0


class DatabaseBackend:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._insert = postgresql.insert if db.is_postgres else sqlite.insert

    async def incr(self, key: str, window: int, expires_at: float) -> int:
        statement = self._insert(RateLimitCounter).values(
            key=key, window=window, count=1, expires_at=datetime.fromtimestamp(expires_at, UTC)
        )
        statement = statement.on_conflict_do_update(
            index_elements=["key", "window"], set_={"count": RateLimitCounter.count + 1}
        ).returning(RateLimitCounter.count)
        async with self._db.transaction() as session:
            return (await session.execute(statement)).scalar_one()

    async def purge(self) -> int:
        async with self._db.transaction() as session:
            result = await session.execute(delete(RateLimitCounter).where(RateLimitCounter.expires_at < utcnow() - timedelta(minutes=1)))
            return result.rowcount


class RateLimiter:
    def __init__(self, backend: MemoryBackend | DatabaseBackend) -> None:
        self.backend = backend

    async def hit(self, key: str, item: limits.RateLimitItem, cost: int = 1) -> Decision:
        period = item.get_expiry()
        now = time.time()
        window = int(now // period)
        reset = (window + 1) * period
        count = 0
        for _ in range(cost):
            count = await self.backend.incr(f"{key}:{period}", window, reset)
        allowed = count <= item.amount
        return Decision(allowed, item.amount, max(0, item.amount - count), max(1, math.ceil(reset - now)))
