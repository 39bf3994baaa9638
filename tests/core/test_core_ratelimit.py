"""Rate limiting in memory, in the database and in Redis, and the connect API throttle (429 of 7A)."""

import asyncio
import secrets

import pytest
from limits.aio.storage import MemoryStorage

from patchbay.core.appkeys import SERVICES
from patchbay.core.ratelimit import limiter as limiter_module
from patchbay.core.ratelimit.limiter import DatabaseStorage, RateLimiter, parse_limit, storage_for
from patchbay.core.settings import RATE_LIMIT_DEFAULTS
from patchbay.core.storage.db import Database
from patchbay.core.testing import create_workspace_with_key
from tests.clock import start_within_one_clock_minute

REDIS_URL = "redis://127.0.0.1:6379/5"
#: one worker runs this file under ``pytest -n``: a test below empties the Redis database the others count in
pytestmark = pytest.mark.xdist_group("redis")


@pytest.fixture(params=["memory", "database", "redis"])
async def limiter(request, database_url):
    if request.param == "database":  # its windows are clock minutes; the others start at the first hit
        await start_within_one_clock_minute()
    db = Database(database_url)
    storage = {"memory": MemoryStorage, "database": lambda: DatabaseStorage(db), "redis": lambda: storage_for(db, REDIS_URL)}[request.param]()
    yield RateLimiter(storage)
    await db.close()


def unique(name: str) -> str:
    """A key no earlier run left in the shared Redis."""
    return f"{name}-{secrets.token_hex(6)}"


@pytest.mark.both_databases
async def test_limit_allows_then_refuses(limiter):
    item = parse_limit("3/minute")
    key = unique("k")
    decisions = [await limiter.hit(key, item) for _ in range(4)]
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert [d.remaining for d in decisions] == [2, 1, 0, 0]
    assert 1 <= decisions[-1].retry_after <= 60
    assert (await limiter.hit(unique("other"), item)).allowed  # keys are independent


async def test_database_counters_are_shared_between_limiters(pg_url, whole_clock_minute):
    first, second = Database(pg_url), Database(pg_url)
    try:
        item = parse_limit("2/minute")
        a, b = RateLimiter(DatabaseStorage(first)), RateLimiter(DatabaseStorage(second))
        assert (await a.hit("shared", item)).allowed
        assert (await b.hit("shared", item)).allowed
        assert not (await a.hit("shared", item)).allowed
    finally:
        await first.close()
        await second.close()


async def test_redis_counters_are_shared_between_limiters():
    item = parse_limit("2/minute")
    a, b = RateLimiter(storage_for(None, REDIS_URL)), RateLimiter(storage_for(None, REDIS_URL))
    key = unique("shared")
    assert (await a.hit(key, item)).allowed
    assert (await b.hit(key, item)).allowed
    assert not (await a.hit(key, item)).allowed


async def test_cost_counts_several_hits(limiter):
    item = parse_limit("5/minute")
    key = unique("cost")
    assert (await limiter.hit(key, item, cost=4)).remaining == 1
    assert not (await limiter.hit(key, item, cost=2)).allowed


@pytest.mark.slow  # 100,000 keys
async def test_memory_limiter_keeps_counting_past_100000_keys():
    """The hand-written limiter wiped every counter once it held 100,000 keys."""
    limiter = RateLimiter(MemoryStorage())
    item = parse_limit("1/hour")
    assert (await limiter.hit("victim", item)).allowed
    for n in range(100_050):
        await limiter.hit(f"filler-{n}", item)
    assert not (await limiter.hit("victim", item)).allowed


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


async def test_app_uses_redis_when_configured(aiohttp_client, make_app):
    app = make_app(redis_url=REDIS_URL, rate_limits={**RATE_LIMIT_DEFAULTS, "connect_api": "2/minute"})
    other = make_app(redis_url=REDIS_URL, rate_limits={**RATE_LIMIT_DEFAULTS, "connect_api": "2/minute"})
    first, second = await aiohttp_client(app), await aiohttp_client(other)
    await app[SERVICES].rate_limiter.storage.reset()  # this test's address counter, left by an earlier run
    response = await first.get("/connect/v1/providers")
    assert response.status == 401
    assert (await second.get("/connect/v1/providers")).status == 401
    # both apps share one counter per address: the third request is refused whichever app answers it
    assert (await first.get("/connect/v1/providers")).status == 429


class CountingStorage(MemoryStorage):
    """A memory storage that counts its writes (a round trip each on Redis or the database)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    async def incr(self, key, expiry, amount=1):
        self.writes += 1
        await asyncio.sleep(0)  # a round trip: other hits run meanwhile
        return await super().incr(key, expiry, amount)


async def test_hits_well_below_the_limit_take_blocks_reserved_in_the_storage():
    storage = CountingStorage()
    limiter = RateLimiter(storage)
    item = parse_limit("1000/minute")  # a block is 1000 / RESERVE_SHARE = 50 hits
    decisions = [await limiter.hit("k", item) for _ in range(100)]
    assert all(d.allowed for d in decisions) and decisions[-1].remaining == 900
    assert storage.writes == 2  # one per 51 hits (the hit and its block), not one per hit
    assert 100 <= await storage.get(item.key_for("k")) <= 100 + item.amount // limiter_module.RESERVE_SHARE


async def test_limit_is_exact_in_one_process_with_reserved_blocks():
    limiter = RateLimiter(CountingStorage())
    item = parse_limit("100/minute")
    allowed = [(await limiter.hit("k", item)).allowed for _ in range(150)]
    assert allowed == [True] * 100 + [False] * 50


async def test_processes_sharing_the_counters_never_admit_more_than_the_limit():
    shared = CountingStorage()  # one Redis (or database) seen by three processes
    processes = [RateLimiter(shared) for _ in range(3)]
    item = parse_limit("100/minute")
    admitted = 0
    for _ in range(80):
        for limiter in processes:
            admitted += (await limiter.hit("k", item)).allowed
    assert item.amount - 3 * item.amount // limiter_module.RESERVE_SHARE <= admitted <= item.amount


async def test_the_remaining_count_stays_at_zero_or_more_when_other_processes_took_most_of_the_window():
    shared = CountingStorage()
    limiter = RateLimiter(shared)
    item = parse_limit("100/minute")  # a block is 5 hits
    for _ in range(6):  # the first hit reserves a block of 5; the next five use it up
        await limiter.hit("k", item)
    await shared.incr(item.key_for("k"), item.get_expiry(), amount=90)  # another process's hits: 96 stored
    # the next write reserves its block from this process's own count (well below half the limit),
    # so the stored count passes the limit while the block still has hits to give
    decisions = [await limiter.hit("k", item) for _ in range(4)]
    assert [d.allowed for d in decisions] == [True] * 4
    assert all(d.remaining >= 0 for d in decisions), [d.remaining for d in decisions]


async def test_hits_arriving_during_a_reserving_write_wait_for_its_block():
    """A burst makes one storage round trip, not one per hit."""
    storage = CountingStorage()
    limiter = RateLimiter(storage)
    item = parse_limit("1000/minute")
    decisions = await asyncio.gather(*(limiter.hit("k", item) for _ in range(40)))
    assert all(d.allowed for d in decisions) and storage.writes == 1


async def test_a_hit_taken_from_the_reserved_block_counts_as_a_hit_and_never_passes_the_limit():
    """``take_reserved`` answers only from a block this process reserved: it writes nothing, and the
    hits it took leave the block as ``hit`` would have."""
    storage = CountingStorage()
    limiter = RateLimiter(storage)
    item = parse_limit("100/minute")  # a block is 5 hits
    assert not limiter.take_reserved("k", item)  # nothing reserved yet: ``hit`` must decide
    assert (await limiter.hit("k", item)).allowed and storage.writes == 1  # the hit and a block of 5
    assert [limiter.take_reserved("k", item) for _ in range(6)] == [True] * 5 + [False]
    assert storage.writes == 1
    assert (await limiter.hit("k", item)).remaining == 100 - 7 and storage.writes == 2  # the 7th hit wrote a new block
    # one process taking from its blocks whenever it can admits exactly the limit
    admitted = 7
    for _ in range(150):
        admitted += limiter.take_reserved("k", item) or (await limiter.hit("k", item)).allowed
    assert admitted == 100


async def test_a_proxied_call_takes_the_connection_limit_from_the_reserved_block(make_app):
    app = make_app()
    async with app[SERVICES].running(migrate=False) as services:
        connections = services.connections.limiter
        item = connections.item
        assert not connections.acquire_now("c1")  # first call: the storage decides (and reserves)
        assert await connections.acquire("c1") == 0
        assert connections.acquire_now("c1")
        connections.block("c1", 30)  # the provider asked for a pause: every call waits for it
        assert not connections.acquire_now("c1") and 29 < await connections.acquire("c1") <= 30
    assert item.amount // limiter_module.RESERVE_SHARE > 1
