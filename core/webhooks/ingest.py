"""Group commit of inbound events: many requests' events stored by one transaction.

A verified event must be committed before its 200 is answered. One transaction per request tops out
near a thousand commits a second, so each request hands its row to :class:`IngestWriter` and awaits a
future; the writer collects the rows that arrive within a few milliseconds (or while the previous
batch commits), inserts them and one processing job for the batch in a single transaction, and only
after the commit resolves every request's future. A failed commit fails every request of the batch
(the provider retries); nothing is answered 200 that is not durable.

Backpressure: while more than ``backlog_limit`` stored events (of every process) wait to be
processed, the writer holds the next batch (up to ``MAX_HOLD_SECONDS``, rechecking every
``BACKLOG_CHECK_SECONDS``), so under overload the 200s slow down to the rate the events are
processed at instead of the backlog, and the time from receipt to forward, growing without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import UTC
from typing import Any

from sqlalchemy import func, select

from patchbay.core.jobs.queue import JobQueue
from patchbay.core.storage.db import Database
from patchbay.core.webhooks.models import WebhookEvent

log = logging.getLogger(__name__)

PROCESS_JOB = "webhooks.process"
BACKLOG_LIMIT = 1000
BACKLOG_CHECK_SECONDS = 0.1
MAX_HOLD_SECONDS = 5.0

_SQLITE_COLUMNS = ("id", "workspace_id", "provider", "status", "body", "body_hash", "connection_hint", "event_type", "created_at", "updated_at")
_SQLITE_INSERT = f"INSERT INTO webhook_events ({', '.join(_SQLITE_COLUMNS)}) VALUES ({', '.join('?' * len(_SQLITE_COLUMNS))})"


def _sqlite_time(moment) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


class IngestWriter:
    def __init__(
        self, db: Database, jobs: JobQueue, *, batch_ms: int = 2, batch_size: int = 1000, concurrency: int | None = None, backlog_limit: int = BACKLOG_LIMIT
    ) -> None:
        self.db = db
        self.backlog_limit = backlog_limit
        self._backlog = 0
        self._backlog_at = float("-inf")
        self.jobs = jobs
        self.delay = batch_ms / 1000
        self.batch_size = batch_size
        # SQLite has one writer: a second concurrent commit would only wait for the first.
        self.concurrency = concurrency or (4 if db.is_postgres else 1)
        self._pending: list[tuple[dict[str, Any], asyncio.Future]] = []
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._slots: asyncio.Semaphore | None = None
        self._flushes: set[asyncio.Task] = set()
        self._closing = False

    async def submit(self, row: dict[str, Any]) -> None:
        """Store ``row`` (a ``webhook_events`` row); returns once it is committed."""
        if self._closing:
            raise RuntimeError("the ingest writer is shutting down")
        if self._task is None:
            self.start()
        future = asyncio.get_running_loop().create_future()
        self._pending.append((row, future))
        assert self._wakeup is not None
        self._wakeup.set()
        await future

    def start(self) -> None:
        if self._task is None:
            self._wakeup = asyncio.Event()
            self._slots = asyncio.Semaphore(self.concurrency)
            self._task = asyncio.create_task(self._run(), name="patchbay-webhook-ingest")

    async def close(self) -> None:
        """Commit what is pending, then stop."""
        self._closing = True
        if self._task is not None:
            assert self._wakeup is not None
            self._wakeup.set()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._flushes:
            await asyncio.gather(*self._flushes, return_exceptions=True)

    async def _run(self) -> None:
        assert self._wakeup is not None and self._slots is not None
        while True:
            if not self._pending:
                if self._closing:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            if len(self._pending) < self.batch_size and self.delay > 0 and not self._closing:
                await asyncio.sleep(self.delay)  # let concurrent requests join this batch
            await self._hold_while_backlogged()
            await self._slots.acquire()
            batch, self._pending = self._pending[: self.batch_size], self._pending[self.batch_size :]
            task = asyncio.create_task(self._flush(batch))
            self._flushes.add(task)
            task.add_done_callback(self._flushes.discard)

    async def _hold_while_backlogged(self) -> None:
        deadline = time.monotonic() + MAX_HOLD_SECONDS
        while not self._closing and time.monotonic() < deadline:
            if time.monotonic() - self._backlog_at >= BACKLOG_CHECK_SECONDS:
                try:
                    async with self.db.session() as session:
                        self._backlog = await session.scalar(select(func.count()).select_from(WebhookEvent).where(WebhookEvent.status == "RECEIVED")) or 0
                except Exception:
                    log.warning("counting the unprocessed inbound events failed; not holding receipts", exc_info=True)
                    return
                self._backlog_at = time.monotonic()
            if self._backlog <= self.backlog_limit:
                return
            await asyncio.sleep(BACKLOG_CHECK_SECONDS)

    async def _insert(self, session, rows: list[dict[str, Any]]) -> None:
        if self.db.is_postgres:
            await session.execute(WebhookEvent.__table__.insert(), rows)
            return
        # SQLite: the driver's executemany, without SQLAlchemy's per-row parameter processing
        # (half the cost of a batch); timestamps in the format SQLAlchemy stores and parses.
        connection = await session.connection()
        values = [
            tuple(row.get(column) for column in _SQLITE_COLUMNS[:-2]) + (_sqlite_time(row["created_at"]), _sqlite_time(row["updated_at"])) for row in rows
        ]
        await connection.exec_driver_sql(_SQLITE_INSERT, values)

    async def _flush(self, batch: list[tuple[dict[str, Any], asyncio.Future]]) -> None:
        assert self._slots is not None
        try:
            rows = [row for row, _ in batch]
            async with self.db.transaction() as session:
                await self._insert(session, rows)
                await self.jobs.enqueue_many(session, PROCESS_JOB, [{"event_ids": [row["id"] for row in rows]}])
        except Exception as error:
            log.exception("storing %d inbound webhook events failed", len(batch))
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
        else:
            self._backlog += len(batch)  # counted until the next look at the database
            for _, future in batch:
                if not future.done():
                    future.set_result(None)
        finally:
            self._slots.release()
