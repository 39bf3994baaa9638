"""Rate limiting in memory and in the database, and the connect API throttle (429 of 7A)."""

import pytest

from patchbay.core.ratelimit.limiter import DatabaseBackend, MemoryBackend, RateLimiter, parse_limit
from patchbay.core.settings import RATE_LIMIT_DEFAULTS
from patchbay.core.storage.db import Database
from patchbay.core.testing import create_workspace_with_key


@pytest.fixture(params=["memory", "database"])
async def limiter(request, database_url):
    db = Database(database_url)
    yield RateLimiter(MemoryBackend() if request.param == "memory" else DatabaseBackend(db))
    await db.close()


async def test_limit_allows_then_refuses(limiter):
    item = parse_limit("3/minute")
    decisions = [await limiter.hit("k", item) for _ in range(4)]
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert [d.remaining for d in decisions] == [2, 1, 0, 0]
    assert 1 <= decisions[-1].retry_after <= 60
    assert (await limiter.hit("other", item)).allowed  # keys are independent


async def test_database_counters_are_shared_between_limiters(pg_url):
    first, second = Database(pg_url), Database(pg_url)
    try:
        item = parse_limit("2/minute")
        a, b = RateLimiter(DatabaseBackend(first)), RateLimiter(DatabaseBackend(second))
        assert (await a.hit("shared", item)).allowed
        assert (await b.hit("shared", item)).allowed
        assert not (await a.hit("shared", item)).allowed
    finally:
        await first.close()
        await second.close()


def test_off_means_no_limit():
    assert parse_limit("off") is None


async def test_connect_api_throttle_answers_429_per_workspace(aiohttp_client, make_app):
    app = make_app(rate_limits={**RATE_LIMIT_DEFAULTS, "connect_api": "2/minute"})
    client = await aiohttp_client(app)
    one = await create_workspace_with_key(app, name="One")
    two = await create_workspace_with_key(app, name="Two")
    codes = [(await client.get("/connect/v1/providers", headers=one["headers"])).status for _ in range(2)]
    refused = await client.get("/connect/v1/providers", headers=one["headers"])
    assert codes == [200, 200] and refused.status == 429
    assert await refused.json() == {"statusCode": 429, "message": "ThrottlerException: Too Many Requests"}
    assert int(refused.headers["Retry-After"]) >= 1
    assert (await client.get("/connect/v1/providers", headers=two["headers"])).status == 200
    assert (await client.get("/health")).status == 200  # outside the connect API
