"""The limiter remembers each (key, limit)'s storage key: two limits on one key still count apart,
and one limit on two keys too."""

from __future__ import annotations

from limits.aio.storage import MemoryStorage

from patchbay.core.ratelimit.limiter import RateLimiter, parse_limit


async def test_remembered_storage_keys_keep_limits_and_keys_apart():
    limiter = RateLimiter(MemoryStorage())
    two, three = parse_limit("2/minute"), parse_limit("3/minute")
    assert [(await limiter.hit("a", two)).allowed for _ in range(3)] == [True, True, False]
    assert [(await limiter.hit("a", three)).allowed for _ in range(4)] == [True, True, True, False]
    assert [(await limiter.hit("b", two)).allowed for _ in range(3)] == [True, True, False]
