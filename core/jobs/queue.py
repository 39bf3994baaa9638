"""A durable job queue in the database.

A job is enqueued in the same session (so the same transaction) as the change that causes it; when
that transaction commits, this process's workers wake at once and other processes' workers find it on
their next poll. Workers claim jobs in batches (``FOR UPDATE SKIP LOCKED`` on PostgreSQL; SQLite's
single writer makes the claiming UPDATE atomic), each with a lease that the worker extends while the
job runs, so a job whose worker died is claimed again when its lease runs out. A handler that raises
is retried with exponential backoff until ``max_attempts``; :class:`RetryLater` asks for a given delay
and :class:`PermanentFailure` stops at once.

Delivery is at least once: after a crash a handler may run again, so it must be idempotent. A kind
registered with ``transactional=True`` gets ``context.session``, a transaction that also marks the job
done, so its database effects happen exactly once (a worker that lost its lease rolls back).

A kind registered with ``merge`` (for example ``concatenating("event_ids")``) has the jobs that one
claim brings on their first attempt merged: one handler call with the merged payload, all marked
done together, or each retried on its own schedule when the call fails. Hot paths enqueue a job per
small batch and, under load, are run a batch of batches at a time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import attrs
from sqlalchemy import and_, bindparam, event, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from patchbay.core.jobs.models import Job
from patchbay.core.storage.db import Database
from patchbay.core.storage.sql import one_of, one_of_param
from patchbay.core.timeutil import new_id, utcnow

log = logging.getLogger(__name__)

LEASE_SECONDS = 60
#: hot-path statements use the table (Core), not the ORM: no per-statement ORM bulk machinery
_JOBS = Job.__table__
_NOTIFY_KEY = "patchbay.jobs.wake"
_NOW = bindparam("now", type_=_JOBS.c.updated_at.type)

#: a worker's claim, built once (building it took longer than running it): up to ``limit`` due
#: jobs of ``kinds``, or jobs whose lease ran out, leased to ``worker`` until ``lease_until``
_CLAIMABLE = (
    select(_JOBS.c.id)
    .where(
        one_of_param(_JOBS.c.kind, "kinds"),
        or_(and_(_JOBS.c.status == "queued", _JOBS.c.run_at <= _NOW), and_(_JOBS.c.status == "running", _JOBS.c.lease_until < _NOW)),
    )
    .order_by(_JOBS.c.run_at)
    .limit(bindparam("limit"))
    .with_for_update(skip_locked=True)
)
_CLAIM = (
    update(_JOBS)
    .where(_JOBS.c.id.in_(_CLAIMABLE.scalar_subquery()))
    .values(
        status="running",
        attempts=_JOBS.c.attempts + 1,
        lease_until=bindparam("lease_until", type_=_JOBS.c.lease_until.type),
        locked_by=bindparam("worker"),
        updated_at=_NOW,
    )
    .returning(*_JOBS.c)
)
#: finished jobs of ``ids`` that ``worker`` still holds, marked done (built once, as the claim)
_MARK_DONE = (
    update(_JOBS).where(one_of_param(_JOBS.c.id, "ids"), _JOBS.c.locked_by == bindparam("worker")).values(status="done", lease_until=None, updated_at=_NOW)
)


class RetryLater(Exception):
    """Retry the job after ``delay`` seconds (counts as an attempt)."""

    def __init__(self, delay: float, message: str = "") -> None:
        super().__init__(message or f"retry in {delay}s")
        self.delay = delay


class PermanentFailure(Exception):
    """Fail the job now, without further attempts."""


@attrs.define
class JobContext:
    services: Any  # patchbay.core.services.Services
    job_id: str
    kind: str
    payload: dict[str, Any]
    attempt: int
    max_attempts: int
    workspace_id: str | None
    session: AsyncSession | None = None

    @property
    def is_last_attempt(self) -> bool:
        return self.attempt >= self.max_attempts


Handler = Callable[[JobContext], Awaitable[Any]]
Merge = Callable[[list[dict[str, Any]]], dict[str, Any]]


def concatenating(key: str) -> Merge:
    """A ``merge``: one payload whose list ``key`` is every payload's ``key`` list in turn."""

    def merge(payloads: list[dict[str, Any]]) -> dict[str, Any]:
        return {key: [item for payload in payloads for item in payload.get(key, ())]}

    return merge


@attrs.frozen
class JobKind:
    handler: Handler
    max_attempts: int = 5
    backoff_base: float = 1.0
    backoff_cap: float = 300.0
    transactional: bool = False
    merge: Merge | None = None

    def delay(self, attempt: int) -> float:
        return min(self.backoff_cap, self.backoff_base * 2 ** max(0, attempt - 1))


def _wake_after_commit(session: Session) -> None:
    wake = session.info.pop(_NOTIFY_KEY, None)
    if wake is not None:
        wake.set()


def _forget_after_rollback(session: Session) -> None:
    session.info.pop(_NOTIFY_KEY, None)


class LostLease(Exception):
    """Another worker claimed the job after this worker's lease ran out."""


class JobQueue:
    def __init__(self, db: Database, *, lease_seconds: float = LEASE_SECONDS) -> None:
        self.db = db
        event.listen(db.session_class, "after_commit", _wake_after_commit)
        event.listen(db.session_class, "after_rollback", _forget_after_rollback)
        self.lease_seconds = lease_seconds
        self.kinds: dict[str, JobKind] = {}
        self.wake = asyncio.Event()
        self._insert = postgresql.insert if db.is_postgres else sqlite.insert

    def register(
        self,
        kind: str,
        handler: Handler,
        *,
        max_attempts: int = 5,
        backoff_base: float = 1.0,
        backoff_cap: float = 300.0,
        transactional: bool = False,
        merge: Merge | None = None,
    ) -> None:
        if kind in self.kinds:
            raise ValueError(f"job kind {kind!r} is already registered")
        if merge is not None and transactional:
            raise ValueError("a transactional job kind cannot be merged")
        self.kinds[kind] = JobKind(handler, max_attempts, backoff_base, backoff_cap, transactional, merge)

    # -- enqueueing -------------------------------------------------------------------------------

    def enqueue(
        self,
        session: AsyncSession,
        kind: str,
        payload: dict[str, Any] | None = None,
        *,
        delay: float = 0,
        workspace_id: str | None = None,
        dedupe_key: str | None = None,
    ) -> Job:
        """Add a job to ``session``; it is durable when the session's transaction commits."""
        spec = self._spec(kind)
        job = Job(
            id=new_id(),
            kind=kind,
            payload=payload or {},
            run_at=utcnow() + timedelta(seconds=delay),
            max_attempts=spec.max_attempts,
            workspace_id=workspace_id,
            dedupe_key=dedupe_key,
        )
        session.add(job)
        session.info[_NOTIFY_KEY] = self.wake
        return job

    async def enqueue_many(
        self, session: AsyncSession, kind: str, payloads: list[dict[str, Any]], *, workspace_id: str | None = None, delay: float = 0
    ) -> list[str]:
        """Add many jobs of one kind with one INSERT (hot paths); answers their ids."""
        if not payloads:
            return []
        spec = self._spec(kind)
        now = utcnow()
        run_at = now + timedelta(seconds=delay)
        rows = [
            {
                "id": new_id(),
                "kind": kind,
                "payload": payload,
                "status": "queued",
                "run_at": run_at,
                "attempts": 0,
                "max_attempts": spec.max_attempts,
                "workspace_id": workspace_id,
                "created_at": now,
                "updated_at": now,
            }
            for payload in payloads
        ]
        session.sync_session.info[_NOTIFY_KEY] = self.wake
        await session.execute(Job.__table__.insert(), rows)
        return [row["id"] for row in rows]

    async def finish_queued(self, session: AsyncSession, job_ids: list[str]) -> None:
        """Mark done, in ``session``'s transaction, those of ``job_ids`` that no worker has claimed
        yet: their work was done another way (a claimed one runs and must find nothing to do)."""
        if job_ids:
            await session.execute(update(_JOBS).where(one_of(_JOBS.c.id, job_ids), _JOBS.c.status == "queued").values(status="done", updated_at=utcnow()))

    async def enqueue_once(self, kind: str, payload: dict[str, Any], dedupe_key: str) -> bool:
        """Enqueue unless a job with ``dedupe_key`` exists (in any process); True if enqueued."""
        spec = self._spec(kind)
        now = utcnow()
        statement = (
            self._insert(Job)
            .values(
                id=new_id(),
                kind=kind,
                payload=payload,
                status="queued",
                run_at=now,
                attempts=0,
                max_attempts=spec.max_attempts,
                dedupe_key=dedupe_key,
                created_at=now,
                updated_at=now,
            )
            .on_conflict_do_nothing(index_elements=["dedupe_key"])
        )
        async with self.db.transaction() as session:
            inserted = (await session.execute(statement)).rowcount > 0
        if inserted:
            self.wake.set()
        return inserted

    async def backlog(self, workspace_id: str) -> tuple[int, datetime | None]:
        """How many of the workspace's jobs are due and waiting for a worker, and since when the
        oldest one waits (the console's home: a queue that grows or ages needs attention)."""
        due = (Job.workspace_id == workspace_id) & (Job.status == "queued") & (Job.run_at <= utcnow())
        async with self.db.session() as session:
            row = (await session.execute(select(func.count(), func.min(Job.run_at)).where(due))).one()
        return int(row[0] or 0), row[1]  # min() keeps the column's type: an aware UTC moment

    def _spec(self, kind: str) -> JobKind:
        try:
            return self.kinds[kind]
        except KeyError:
            raise ValueError(f"no handler registered for job kind {kind!r}") from None

    # -- claiming and finishing ------------------------------------------------------------------

    async def claim(self, worker_id: str, limit: int) -> list[Any]:
        """Lease up to ``limit`` due jobs (or jobs whose lease ran out) to ``worker_id``: rows with
        the columns of ``jobs``."""
        now = utcnow()
        parameters = {"kinds": list(self.kinds), "now": now, "limit": limit, "lease_until": now + timedelta(seconds=self.lease_seconds), "worker": worker_id}
        async with self.db.transaction() as session:  # rows, not ORM objects: claiming is on every worker's hot path
            return list((await session.execute(_CLAIM, parameters)).all())

    async def extend_leases(self, worker_id: str, job_ids: list[str]) -> None:
        if not job_ids:
            return
        async with self.db.transaction() as session:
            await session.execute(
                update(Job)
                .where(one_of(Job.id, job_ids), Job.locked_by == worker_id, Job.status == "running")
                .values(lease_until=utcnow() + timedelta(seconds=self.lease_seconds))
                .execution_options(synchronize_session=False)
            )

    async def mark_done(self, worker_id: str, job_ids: list[str]) -> None:
        if not job_ids:
            return
        async with self.db.transaction() as session:
            await session.execute(_MARK_DONE, {"ids": list(job_ids), "worker": worker_id, "now": utcnow()})

    async def mark_done_in(self, session: AsyncSession, worker_id: str, job_id: str) -> None:
        """Mark a job done inside ``session``'s transaction; raise :class:`LostLease` if this worker
        no longer holds it."""
        result = await session.execute(
            update(Job)
            .where(Job.id == job_id, Job.locked_by == worker_id, Job.status == "running")
            .values(status="done", lease_until=None, updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        if result.rowcount != 1:
            raise LostLease(job_id)

    async def mark_failed(self, worker_id: str, job: Any, error: str, retry_in: float | None) -> None:
        values: dict[str, Any] = {"last_error": error[:4000], "lease_until": None, "updated_at": utcnow()}
        if retry_in is None:
            values["status"] = "failed"
        else:
            values.update(status="queued", run_at=utcnow() + timedelta(seconds=retry_in))
        async with self.db.transaction() as session:
            await session.execute(update(Job).where(Job.id == job.id, Job.locked_by == worker_id).values(**values).execution_options(synchronize_session=False))

    async def release(self, worker_id: str, job_ids: list[str]) -> None:
        """Give back jobs this worker claimed but did not finish (it is stopping): queued again at
        once, and the interrupted attempt does not count."""
        if not job_ids:
            return
        async with self.db.transaction() as session:
            await session.execute(
                update(Job)
                .where(one_of(Job.id, job_ids), Job.locked_by == worker_id, Job.status == "running")
                .values(status="queued", attempts=Job.attempts - 1, lease_until=None, locked_by=None, run_at=utcnow(), updated_at=utcnow())
                .execution_options(synchronize_session=False)
            )

    def retry_delay(self, job: Any, error: BaseException) -> float | None:
        """Seconds until the next attempt, or None when the job has failed for good."""
        if isinstance(error, PermanentFailure) or job.attempts >= job.max_attempts:
            return None
        if isinstance(error, RetryLater):
            return error.delay
        return self.kinds[job.kind].delay(job.attempts)
