"""Per-process state of the connection layer, held by the services (``services.connections``).

- a short-lived cache of decrypted connections (a proxied call must not pay a database read and a
  decryption every time); writes in this process invalidate it at once, other processes' writes
  are seen after at most ``CACHE_SECONDS`` (a stale token then meets a 401, which refreshes);
- one asyncio lock per connection, so the calls of this process needing a refresh wait for one
  refresh (the database lease in ``refresh`` does the same across processes);
- the per-connection rate limiter, including the back-off the provider asked for;
- the audit log buffer, written in batches.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import math
import os
import random
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import aiohttp
import attrs
from sqlalchemy.engine import Dialect

from patchbay.core.connections.models import ProxyCallLog
from patchbay.core.ratelimit.limiter import RateLimiter, parse_limit
from patchbay.core.timeutil import utcnow

if TYPE_CHECKING:
    from patchbay.core.http.metrics import Metrics
    from patchbay.core.outbound import Outbound
    from patchbay.core.services import Services
    from patchbay.core.storage.db import Database

log = logging.getLogger(__name__)

CACHE_SECONDS = 5.0
AUDIT_FLUSH_SECONDS = 0.5
AUDIT_BATCH = 500
#: rows kept while the database cannot take them; beyond this the oldest are dropped (and counted)
AUDIT_MAX_PENDING = 20_000
#: waits between failed writes grow from one second to this
AUDIT_RETRY_CAP_SECONDS = 30.0


@attrs.define(kw_only=True)
class ConnectionState:
    """A decrypted snapshot of one connection row."""

    id: str
    workspace_id: str
    provider: str
    status: str
    credentials: dict[str, Any] = attrs.field(repr=False)
    params: dict[str, Any]
    metadata: dict[str, Any]
    scopes: list[Any]
    expires_at: datetime | None
    oauth_app: str | None
    connected_at: datetime | None = None
    loaded_at: float = attrs.field(factory=time.monotonic)
    #: (headers, query) injected on calls, computed once per snapshot
    injected: tuple[dict[str, str], dict[str, str]] | None = attrs.field(default=None, repr=False)
    base_url: str | None = None

    @property
    def access_token(self) -> str | None:
        return self.credentials.get("access_token")

    def expires_within(self, seconds: float) -> bool:
        if self.expires_at is None:
            return False
        return (self.expires_at - utcnow()).total_seconds() <= seconds


class Throttled(Exception):
    def __init__(self, retry_after: float) -> None:
        super().__init__(f"retry after {retry_after:.1f}s")
        self.retry_after = retry_after


class ConnectionLimiter:
    """The proxy's limit per connection (``[rate_limits] proxy``), counted where the connect API's
    limit is (:class:`~patchbay.core.ratelimit.limiter.RateLimiter`: Redis, PostgreSQL, or the
    SQLite file under ``serve --processes``, so every process and host shares it), plus the
    provider's own back-off (429 / Retry-After / remaining 0), in this process."""

    def __init__(self, limit_text: str, rate_limiter: Callable[[], RateLimiter]) -> None:
        self.item = parse_limit(limit_text)
        self._rate_limiter = rate_limiter
        self._blocked: dict[str, float] = {}

    def acquire_now(self, connection_id: str) -> bool:
        """True when the call may go now without asking the shared storage (no limit, or a hit
        this process reserved; the hit is counted): the usual case, on every proxied call. False
        leaves the decision to :meth:`acquire`."""
        if connection_id in self._blocked:
            return False
        return self.item is None or self._rate_limiter().take_reserved(f"proxy:connection:{connection_id}", self.item)

    async def acquire(self, connection_id: str) -> float:
        """0 when the call may go now, else the seconds to wait."""
        blocked = self._blocked.get(connection_id)
        if blocked is not None:
            now = time.time()
            if blocked > now:
                return blocked - now
            del self._blocked[connection_id]
        if self.item is None:
            return 0.0
        decision = await self._rate_limiter().hit(f"proxy:connection:{connection_id}", self.item)
        return 0.0 if decision.allowed else float(decision.retry_after)

    def block(self, connection_id: str, seconds: float) -> None:
        """The provider asked for a pause: hold every call of this connection for ``seconds``."""
        until = time.time() + max(0.0, seconds)
        self._blocked[connection_id] = max(until, self._blocked.get(connection_id, 0.0))


class RowIds:
    """Audit row ids: time-ordered UUID strings (version 7, RFC 9562), the millisecond of the call
    then the 74 bits RFC 9562 leaves random. Those are drawn once per millisecond (73 of them: the
    last 48 bits start below 2**47, leaving room to count), from a generator seeded from the
    system's randomness once (and again in a forked child, :meth:`reseed`); the ids of one
    millisecond then count up from them (RFC 9562's monotonic random, 6.2 method 2), so an id costs
    one formatted integer instead of a draw and a whole UUID's formatting. Rows of one millisecond
    sort in the order they were made, later milliseconds after them: the audit table's primary key
    index grows at its end instead of taking each row on a random page (a page write per row once
    the index outgrows the cache, on SQLite and PostgreSQL alike)."""

    def __init__(self) -> None:
        self._random = random.Random()
        self.reseed()

    def reseed(self) -> None:
        self._random.seed()
        self._millisecond = -1
        self._prefix = ""
        self._count = 0

    def at(self, millisecond: int) -> str:
        """The next id of a row made at ``millisecond`` (Unix time)."""
        if millisecond != self._millisecond:
            self._millisecond = millisecond
            high = self._random.getrandbits(26)  # 12 bits of rand_a, the first 14 of rand_b
            stamp = f"{millisecond:012x}"
            self._prefix = f"{stamp[:8]}-{stamp[8:]}-7{high >> 14:03x}-{0x8000 | high & 0x3FFF:04x}-"
            self._count = self._random.getrandbits(47)  # the last 48 bits, with room to count up
        else:
            self._count += 1
        return f"{self._prefix}{self._count:012x}"


_row_ids = RowIds()
os.register_at_fork(after_in_child=_row_ids.reseed)


def row_id() -> str:
    """An audit row id for a row made now (:class:`RowIds`)."""
    return _row_ids.at(time.time_ns() // 1_000_000)


class AuditBuffer:
    """Collects audit rows and inserts them in batches (every ``AUDIT_FLUSH_SECONDS`` or
    ``AUDIT_BATCH`` rows); ``flush()`` writes what is pending now. While the database fails, writes
    are retried with growing waits and at most ``max_pending`` rows are kept: the oldest beyond that
    are dropped, with a log line that counts them, so an outage never exhausts memory. ``metrics``
    answers the /metrics collectors once they exist (the proxy's upstream latency per provider)."""

    def __init__(self, db: Database, *, metrics: Callable[[], Metrics | None] = lambda: None, max_pending: int = AUDIT_MAX_PENDING) -> None:
        self._db = db
        self._metrics = metrics
        self.max_pending = max_pending
        #: rows dropped because the buffer was full while the database failed
        self.dropped = 0
        #: the calls recorded and not written yet, as :meth:`add` records them (:data:`CALL_FIELDS`)
        self._rows: list[tuple] = []
        self._created_at = _timestamp_parameter(db.engine.dialect)
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._flush_lock = asyncio.Lock()

    def add(
        self,
        *,
        workspace_id: str,
        connection_id: str,
        provider: str,
        source: str,
        method: str,
        path: str,
        status: int,
        duration_ms: float,
        error: str | None = None,
        client_id: str | None = None,
        user_id: str | None = None,
    ) -> None:
        """Record one call, at this moment. Its row's id and column values are made when the row
        is written (:func:`driver_rows`): the call's path pays for a tuple."""
        self._rows.append((time.time(), workspace_id, connection_id, provider, source, method, path, status, duration_ms, error, client_id, user_id))
        metrics = self._metrics()
        if metrics is not None:  # the proxy's upstream latency per provider, for /metrics
            metrics.observe_upstream(provider, duration_ms / 1000)
        if len(self._rows) > self.max_pending:
            self._bound()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        if len(self._rows) >= AUDIT_BATCH:
            self._wake.set()

    def _bound(self) -> None:
        excess = len(self._rows) - self.max_pending
        if excess > 0:
            del self._rows[:excess]
            self.dropped += excess
            log.warning("proxy audit buffer full while the database fails: dropped %d oldest rows (%d so far)", excess, self.dropped)

    async def _run(self) -> None:
        wait = 1.0
        while self._rows:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), AUDIT_FLUSH_SECONDS)
            self._wake.clear()
            try:
                await self.flush()
            except Exception:
                log.exception("writing %d proxy audit rows failed; retrying in %gs", len(self._rows), wait)
                await asyncio.sleep(wait)
                wait = min(AUDIT_RETRY_CAP_SECONDS, wait * 2)
            else:
                wait = 1.0

    async def flush(self) -> None:
        async with self._flush_lock:
            rows, self._rows = self._rows, []
            if not rows:
                return
            try:
                async with self._db.transaction() as session:
                    connection = await session.connection()
                    for columns, values in zip((LEAN_COLUMNS, COLUMNS), driver_rows(rows, self._created_at), strict=True):
                        start = 0
                        for size in insert_sizes(len(values)):
                            parameters = tuple(itertools.chain.from_iterable(values[start : start + size]))
                            await connection.exec_driver_sql(_audit_insert(connection.dialect, size, columns), parameters)
                            start += size
            except Exception:
                self._rows[:0] = rows
                self._bound()
                raise

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        try:
            await self.flush()
        except Exception:
            log.exception("dropping %d proxy audit rows at shutdown", len(self._rows))


#: what :meth:`AuditBuffer.add` records of a call, in order
CALL_FIELDS = ("epoch", "workspace_id", "connection_id", "provider", "source", "method", "path", "status", "duration_ms", "error", "client_id", "user_id")
#: the columns of an audit row without an error, an OAuth client or a user: most proxied calls
LEAN_COLUMNS = ("id", "workspace_id", "connection_id", "provider", "source", "method", "path", "status", "duration_ms", "created_at")
#: every column of an audit row
COLUMNS = (*LEAN_COLUMNS, "error", "client_id", "user_id")


def driver_rows(calls: list[tuple], created_at: Callable[[float], Any]) -> tuple[list[tuple], list[tuple]]:
    """The recorded ``calls`` as the driver-level inserts take them, in order: the rows of
    :data:`LEAN_COLUMNS` (their three other columns are NULL: left to the column's default, since a
    NULL parameter costs the SQLite driver an adaptation lookup), then those of :data:`COLUMNS`.
    ``created_at`` is the column's driver value of a moment (:func:`_timestamp_parameter`); every
    other value is the Python value as it is (text, integers, floats, None: no column's bind
    conversion changes those)."""
    lean: list[tuple] = []
    full: list[tuple] = []
    new_id = _row_ids.at
    for epoch, workspace_id, connection_id, provider, source, method, path, status, duration_ms, error, client_id, user_id in calls:
        row = (new_id(int(epoch * 1000)), workspace_id, connection_id, provider, source, method, path[:2000], status, round(duration_ms, 3), created_at(epoch))
        if error is None and client_id is None and user_id is None:
            lean.append(row)
        else:
            full.append((*row, error, client_id, user_id))
    return lean, full


_PLACEHOLDERS = {"qmark": "?", "format": "%s", "pyformat": "%s"}


def _timestamp_parameter(dialect: Dialect) -> Callable[[float], Any]:
    """What ``created_at`` binds from a row's epoch seconds on ``dialect``: the column type's
    conversion of that moment. On SQLite that conversion is text; its date and time part is made
    once per second and the microseconds are appended, which is most of an audit row's insert
    work otherwise (a datetime per row, its time zone moved, then formatted)."""
    convert = ProxyCallLog.__table__.c.created_at.type._cached_bind_processor(dialect)

    def moment(epoch: float) -> Any:
        value = datetime.fromtimestamp(epoch, UTC)
        return convert(value) if convert is not None else value

    whole = moment(0.0)
    if not (isinstance(whole, str) and whole.endswith(".000000")):
        return moment
    second_text: tuple[int, str] = (-1, "")  # (second, its text without the fraction)

    def text(epoch: float) -> str:
        nonlocal second_text
        second = int(epoch)
        if second_text[0] != second:
            second_text = (second, moment(second)[:-7])
        return f"{second_text[1]}.{int((epoch - second) * 1_000_000):06d}"

    return text


def insert_sizes(count: int) -> list[int]:
    """The row counts of the inserts that write ``count`` rows: ``AUDIT_BATCH`` while that many are
    left, then the powers of two that make up the rest (7 rows: 4, 2, 1). Each count is one
    statement text, so a flush reuses statements the driver compiled before (SQLite's statement
    cache, PostgreSQL's prepared statements) instead of compiling one of a new length, several
    thousand parameters long, nearly every flush: that doubled the database's work per row."""
    sizes = [AUDIT_BATCH] * (count // AUDIT_BATCH)
    rest = count % AUDIT_BATCH
    sizes += [1 << bit for bit in reversed(range(rest.bit_length())) if rest >> bit & 1]
    return sizes


@functools.lru_cache(maxsize=128)
def _audit_insert(dialect: Dialect, rows: int, columns: tuple[str, ...]) -> str:
    """The driver-level ``INSERT`` of ``rows`` audit rows of ``columns`` in one statement (multi-row
    ``VALUES``).
    One statement, not ``executemany``: SQLite's driver steps each row of an ``executemany``
    separately, taking the interpreter's lock back from the event loop's thread between rows, and
    those hand-overs cost the loop more than the insert itself."""
    table = ProxyCallLog.__table__
    count = len(columns) * rows
    if dialect.paramstyle in _PLACEHOLDERS:
        marks = [_PLACEHOLDERS[dialect.paramstyle]] * count
    elif dialect.paramstyle in ("numeric", "numeric_dollar"):
        sign = "$" if dialect.paramstyle == "numeric_dollar" else ":"
        marks = [f"{sign}{n}" for n in range(1, count + 1)]
    else:
        raise RuntimeError(f"unsupported driver parameter style {dialect.paramstyle}")
    quote = dialect.identifier_preparer.quote
    values = ", ".join(f"({', '.join(marks[start : start + len(columns)])})" for start in range(0, count, len(columns)))
    return f"INSERT INTO {quote(table.name)} ({', '.join(quote(name) for name in columns)}) VALUES {values}"


class ProxyTimeouts:
    """The client timeouts of the proxy's calls, ``outbound.stream_timeout()`` or ``call_timeout()``,
    made again only when the outbound client or its settings change."""

    def __init__(self) -> None:
        self._made: tuple[Outbound, tuple[float, float], aiohttp.ClientTimeout, aiohttp.ClientTimeout] | None = None

    def get(self, outbound: Outbound, *, stream: bool) -> aiohttp.ClientTimeout:
        settings = (outbound.limits.call_timeout_seconds, outbound.limits.stream_idle_seconds)
        made = self._made
        if made is None or made[0] is not outbound or made[1] != settings:
            made = self._made = (outbound, settings, outbound.call_timeout(), outbound.stream_timeout())
        return made[3] if stream else made[2]


class ConnectionsRuntime:
    def __init__(self, services: Services) -> None:
        self.owner = uuid.uuid4().hex  # this process's name in refresh leases
        self.cache: dict[str, ConnectionState] = {}
        self.locks: dict[str, asyncio.Lock] = {}
        #: reads of expired cache entries in flight, shared by the calls that wait for them
        self.loading: dict[str, asyncio.Future] = {}
        self.limiter = ConnectionLimiter(services.settings.rate_limits.get("proxy", "off"), lambda: services.rate_limiter)
        self.audit = AuditBuffer(services.db, metrics=lambda: services.metrics)  # /metrics is installed after this
        self.timeouts = ProxyTimeouts()

    def cached(self, connection_id: str) -> ConnectionState | None:
        state = self.cache.get(connection_id)
        if state is None or time.monotonic() - state.loaded_at > CACHE_SECONDS:
            return None
        return state

    def remember(self, state: ConnectionState) -> None:
        if len(self.cache) > 10_000:
            self.cache.clear()
        self.cache[state.id] = state

    def forget(self, connection_id: str) -> None:
        self.cache.pop(connection_id, None)

    def lock(self, connection_id: str) -> asyncio.Lock:
        lock = self.locks.get(connection_id)
        if lock is None:
            lock = self.locks[connection_id] = asyncio.Lock()
        return lock


def retry_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a header holding either a delay, an epoch timestamp or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        number = float(value)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            moment = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, moment.timestamp() - (now or time.time()))
    if math.isnan(number) or number < 0:
        return None
    if number > 1_000_000_000:  # an epoch timestamp (seconds, or milliseconds)
        if number > 1_000_000_000_000:
            number /= 1000
        return max(0.0, number - (now or time.time()))
    return number
