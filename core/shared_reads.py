"""Values a process reads from the database and keeps for a few seconds (verified API keys, OAuth
clients), where the requests that miss one key at once share one read of it.

A read answers the value and how many seconds it may be remembered (0 or less: not remembered, as
for a key that names nothing yet). :meth:`SharedReads.forget` and :meth:`SharedReads.clear` also
drop the reads under way: a request that comes after them reads again, and what a read that ran
across them found is not remembered (it may have seen the row before the change that called them).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: (value, seconds it may be remembered)
Read = Callable[[], Awaitable[tuple[V, float]]]


class SharedReads(Generic[K, V]):
    def __init__(self, *, limit: int = 10_000) -> None:
        self._limit = limit
        self._values: dict[K, tuple[float, V]] = {}  # key -> (remembered until, monotonic clock; value)
        self._reads: dict[K, asyncio.Future[tuple[float, V]]] = {}

    async def get(self, key: K, read: Read) -> V:
        """The value of ``key``: remembered, or from the read under way for it, or from ``read()``."""
        hit = self._values.get(key)
        if hit is not None and time.monotonic() < hit[0]:
            return hit[1]
        pending = self._reads.get(key)
        if pending is None:
            pending = self._reads[key] = asyncio.ensure_future(_read_with_expiry(read))
            pending.add_done_callback(functools.partial(self._finished, key))
        return (await asyncio.shield(pending))[1]  # a caller cancelled does not cancel the others' read

    def forget(self, key: K) -> None:
        self._values.pop(key, None)
        self._reads.pop(key, None)

    def clear(self) -> None:
        self._values.clear()
        self._reads.clear()

    def _finished(self, key: K, pending: asyncio.Future[tuple[float, V]]) -> None:
        if self._reads.get(key) is not pending:  # forgotten while it ran
            return
        del self._reads[key]
        if pending.cancelled() or pending.exception() is not None:
            return
        until, value = pending.result()
        if until > time.monotonic():
            if len(self._values) >= self._limit:
                self._values.clear()
            self._values[key] = (until, value)


async def _read_with_expiry(read: Read) -> tuple[float, V]:
    started = time.monotonic()
    value, seconds = await read()
    return started + seconds, value
