"""The durable job queue (``JobQueue`` and the default ``Worker`` pool) as one patchbay process runs
it: the app built by ``create_app(settings, background=True)`` with the default settings (16 jobs
at once, the scheduler on) and started as ``patchbay worker`` starts it, on SQLite (a scratch file)
and on PostgreSQL, against a naive queue measured in the same run on the same database and engine.

    python benchmarks/job_queue.py [--jobs 10000] [--batch 100] [--single 1000] [--databases sqlite,postgresql]

For each database, four phases, each on jobs of its own kind with a no-op handler that counts its
calls by job id:

1. enqueued/s in batches: ``--jobs`` jobs, ``--batch`` per ``enqueue_many`` call and transaction (as
   the webhook pipeline, flows and alerts enqueue). They are enqueued through a second ``JobQueue``
   on the same database, so the app's workers, which only claim the kinds their queue has
   registered, leave them queued.
2. claimed-and-done/s: the kind is registered on the app's queue and the workers woken; the clock
   runs from then to the last job's ``updated_at`` (marked done). The CPU time of this process over
   the drain, per job, and on a PostgreSQL server on this machine, its backends' (sampled from
   ``/proc`` every 0.2 s). Also the rate over the first quarter of the jobs done (the backlog at its
   largest) and over the last quarter.
3. enqueued/s one by one: ``--single`` jobs, each ``enqueue``d in a transaction of its own (as a
   request handler enqueues the job its change causes) while the workers run; per-job latency
   p50/p99 from enqueue (``created_at``) to done (``updated_at``).
4. the naive queue: ``--jobs`` jobs (enqueued held, like phase 1) claimed and finished one per
   transaction by as many tasks as the workers run jobs at once, with the same engine:
   ``UPDATE jobs SET status='done' WHERE id = (SELECT id ... LIMIT 1 [FOR UPDATE SKIP LOCKED])
   RETURNING ...``, then the handler, then the commit. The ratio is phase 2's rate over its rate.

The run exits non-zero unless every job of phases 2 to 4 ran exactly once (handler calls counted by
job id) and ended ``done``. PostgreSQL runs when PATCHBAY_TEST_DATABASE_URL (or
PATCHBAY_BENCH_PG_URL) names a server: a scratch database ``patchbay_bench_jobs_<pid>`` is created
and dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from typing import Self

import asyncpg
from aiohttp import web
from flows import _differing
from sqlalchemy import bindparam, func, select, update
from webhook_ingest import cpu_seconds, percentile

from patchbay.core.app import create_app
from patchbay.core.appkeys import SERVICES
from patchbay.core.jobs.models import Job
from patchbay.core.jobs.queue import JobContext, JobQueue
from patchbay.core.settings import load_settings
from patchbay.core.timeutil import utcnow

BATCHED, SINGLE, NAIVE = "bench.batched", "bench.single", "bench.naive"
_JOBS = Job.__table__


class Calls:
    """The no-op handler: counts its calls by job id."""

    def __init__(self) -> None:
        self.by_id: Counter[str] = Counter()

    async def __call__(self, context: JobContext) -> None:
        self.by_id[context.job_id] += 1

    def check(self, expected: list[str]) -> dict[str, int]:
        """How many of ``expected`` never ran, and ran more than once."""
        return {"missing": sum(1 for job_id in expected if job_id not in self.by_id), "twice": sum(1 for job_id in expected if self.by_id[job_id] > 1)}


async def _undone(app, kind: str) -> int:
    async with app[SERVICES].db.session() as session:
        return await session.scalar(select(func.count()).select_from(_JOBS).where(_JOBS.c.kind == kind, _JOBS.c.status != "done"))


async def _wait_done(app, kind: str, timeout: float) -> None:
    """Until no job of ``kind`` is left undone or ``timeout``: a rare check, it takes CPU from the workers."""
    deadline = time.perf_counter() + timeout
    while await _undone(app, kind) and time.perf_counter() < deadline:
        await asyncio.sleep(0.25)


class BackendCpu:
    """CPU seconds spent inside the block by the PostgreSQL backends serving the app's database, when
    the server runs on this machine (its processes readable in ``/proc``). Sampled every
    ``SAMPLE_SECONDS`` (from a connection of its own, left out), so a backend that exits in the block
    (a pool's overflow connection closed on return) counts up to its last sample. ``seconds`` stays
    None on SQLite (in-process) or a server elsewhere."""

    SAMPLE_SECONDS = 0.2

    def __init__(self, app) -> None:
        self.app = app
        self.seconds: float | None = None

    async def __aenter__(self) -> Self:
        self._connection = None
        if self.app[SERVICES].db.is_postgres:
            self._connection = await asyncpg.connect(self.app[SERVICES].db.url.replace("postgresql+asyncpg://", "postgresql://", 1))
            self._first = await self._sample()
            self._last = dict(self._first)
            self._sampler = asyncio.create_task(self._sample_until_cancelled())
        return self

    async def _sample(self) -> dict[int, float]:
        rows = await self._connection.fetch("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
        seconds = {}
        for (pid,) in rows:
            with contextlib.suppress(OSError):  # gone since, or not on this machine
                seconds[pid] = cpu_seconds(pid)
        return seconds

    async def _sample_until_cancelled(self) -> None:
        while True:
            await asyncio.sleep(self.SAMPLE_SECONDS)
            self._last.update(await self._sample())

    async def __aexit__(self, *exc_info) -> None:
        if self._connection is None:
            return
        self._sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._sampler
        self._last.update(await self._sample())
        await self._connection.close()
        if self._last:
            self.seconds = sum(seconds - self._first.get(pid, 0.0) for pid, seconds in self._last.items())


def _rates(jobs: int, seconds: float, cpu: float, db_cpu: float | None) -> dict[str, float | None]:
    """Jobs per second, and CPU milliseconds per job of this process and of the database server."""
    per_job = 1000 / max(1, jobs)
    return {"rate": jobs / seconds, "cpu_ms": cpu * per_job, "db_cpu_ms": None if db_cpu is None else db_cpu * per_job}


async def _enqueue_batched(app, held: JobQueue, kind: str, jobs: int, batch: int) -> tuple[list[str], float]:
    """``jobs`` jobs of ``kind``, ``batch`` per ``enqueue_many`` and transaction; answers the ids and the rate."""
    ids: list[str] = []
    began = time.perf_counter()
    for start in range(0, jobs, batch):
        async with app[SERVICES].db.transaction() as session:
            ids += await held.enqueue_many(session, kind, [{"n": n} for n in range(start, min(jobs, start + batch))])
    return ids, jobs / (time.perf_counter() - began)


async def _drain(app, calls: Calls, timeout: float) -> dict[str, object]:
    """Hand the held ``BATCHED`` jobs to the app's workers; their rate and CPU per job."""
    queue = app[SERVICES].jobs
    async with BackendCpu(app) as backends:
        began, cpu = utcnow(), time.process_time()
        queue.register(BATCHED, calls)
        queue.wake.set()
        await _wait_done(app, BATCHED, timeout)
        cpu = time.process_time() - cpu
    async with app[SERVICES].db.session() as session:
        done = sorted(await session.scalars(select(_JOBS.c.updated_at).where(_JOBS.c.kind == BATCHED, _JOBS.c.status == "done")))
    result = _rates(len(done), (done[-1] - began).total_seconds() if done else float("inf"), cpu, backends.seconds)
    quarter = len(done) // 4
    if quarter:  # each claim's cost may grow with the backlog: the rate while it was largest, and smallest
        result["first_quarter"] = quarter / (done[quarter - 1] - began).total_seconds()
        result["last_quarter"] = quarter / max(1e-6, (done[-1] - done[-quarter - 1]).total_seconds())
    return result


async def _one_by_one(app, calls: Calls, jobs: int, timeout: float) -> tuple[list[str], float, list[float]]:
    """``jobs`` jobs each enqueued in its own transaction while the workers run; the ids, the rate
    and the latencies (ms) from enqueue to done."""
    queue = app[SERVICES].jobs
    queue.register(SINGLE, calls)
    ids = []
    began = time.perf_counter()
    for n in range(jobs):
        async with app[SERVICES].db.transaction() as session:
            ids.append(queue.enqueue(session, SINGLE, {"n": n}).id)
    rate = jobs / (time.perf_counter() - began)
    await _wait_done(app, SINGLE, timeout)
    async with app[SERVICES].db.session() as session:
        rows = (await session.execute(select(_JOBS.c.created_at, _JOBS.c.updated_at).where(_JOBS.c.kind == SINGLE, _JOBS.c.status == "done"))).all()
    return ids, rate, [(done - created).total_seconds() * 1000 for created, done in rows]


async def _naive(app, handler: Calls, jobs: int, tasks: int) -> dict[str, object]:
    """The held ``NAIVE`` jobs claimed and finished one per transaction by ``tasks`` loops."""
    pick = select(_JOBS.c.id).where(_JOBS.c.kind == NAIVE, _JOBS.c.status == "queued").order_by(_JOBS.c.run_at).limit(1).with_for_update(skip_locked=True)
    finish = (
        update(_JOBS)
        .where(_JOBS.c.id == pick.scalar_subquery())
        .values(status="done", updated_at=bindparam("now", type_=_JOBS.c.updated_at.type))
        .returning(_JOBS.c.id, _JOBS.c.kind, _JOBS.c.payload, _JOBS.c.attempts, _JOBS.c.max_attempts, _JOBS.c.workspace_id)
    )

    async def loop() -> None:
        while True:
            async with app[SERVICES].db.transaction() as session:
                job = (await session.execute(finish, {"now": utcnow()})).first()
                if job is None:
                    return
                await handler(JobContext(app, job.id, job.kind, job.payload, job.attempts, job.max_attempts, job.workspace_id, session))

    async with BackendCpu(app) as backends:
        began, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(loop() for _ in range(tasks)))
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    return _rates(jobs, elapsed, cpu, backends.seconds)


async def run(name: str, url: str, args) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as data_dir:
        settings = load_settings({}, {"PATCHBAY_DATABASE_URL": url, "PATCHBAY_DATA_DIR": data_dir, "PATCHBAY_SECRET_KEY": "bench-secret-key-0123456789"})
        app = create_app(settings)  # background work on: the default workers and scheduler
        runner = web.AppRunner(app)  # started as `patchbay worker` starts it: no listening socket
        await runner.setup()
        try:
            calls, naive_calls = Calls(), Calls()
            held = JobQueue(app[SERVICES].db)  # enqueues kinds the app's workers do not claim yet
            held.register(BATCHED, calls)
            held.register(NAIVE, naive_calls)
            ids, enqueue_rate = await _enqueue_batched(app, held, BATCHED, args.jobs, args.batch)
            drained = await _drain(app, calls, args.timeout)
            single_ids, single_rate, latency = await _one_by_one(app, calls, args.single, args.timeout)
            naive_ids, _ = await _enqueue_batched(app, held, NAIVE, args.jobs, args.batch)
            naive = await _naive(app, naive_calls, args.jobs, app[SERVICES].settings.workers)
            undone = {kind: await _undone(app, kind) for kind in (BATCHED, SINGLE, NAIVE)}
        finally:
            await runner.cleanup()
    return {
        "name": name,
        "settings": _differing(settings),
        "workers": settings.workers,
        "enqueue_rate": enqueue_rate,
        "single_rate": single_rate,
        "drained": drained,
        "latency": latency,
        "naive": naive,
        "undone": undone,
        "checks": {"batched": calls.check(ids), "one by one": calls.check(single_ids), "naive": naive_calls.check(naive_ids)},
    }


@contextlib.asynccontextmanager
async def scratch_postgres(server_url: str):
    """A database of our own on the server that ``server_url`` names, dropped on the way out."""
    name = f"patchbay_bench_jobs_{os.getpid()}"
    admin = await asyncpg.connect(server_url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{server_url.rpartition('/')[0]}/{name}"
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


def _cpu(result: dict[str, object]) -> str:
    db = f", database server {result['db_cpu_ms']:.3f}" if result["db_cpu_ms"] is not None else ""
    return f"CPU ms/job: this process {result['cpu_ms']:.3f}{db}"


def report(result: dict[str, object], args) -> bool:
    """Print one database's figures; True when every job ran exactly once and ended done."""
    drained, naive, latency, workers = result["drained"], result["naive"], result["latency"], result["workers"]
    print(f"[{result['name']}]  settings differing from the defaults: {result['settings']}")
    print(f"  enqueued, {args.batch} per enqueue_many and transaction:  {result['enqueue_rate']:7.0f} jobs/s   ({args.jobs} jobs)")
    print(f"  enqueued one by one, a transaction each:      {result['single_rate']:7.0f} jobs/s   ({args.single} jobs, workers running)")
    print(f"  claimed and done, one process, {workers} at once:  {drained['rate']:7.0f} jobs/s   {_cpu(drained)}")
    if "first_quarter" in drained:
        print(
            f"    of which the first quarter of the jobs (largest backlog) {drained['first_quarter']:.0f} jobs/s, the last quarter {drained['last_quarter']:.0f} jobs/s"
        )
    print(f"  naive queue, a transaction per job, {workers} tasks: {naive['rate']:7.0f} jobs/s   {_cpu(naive)}")
    ratios = f"patchbay / naive: {drained['rate'] / naive['rate']:.2f}x the jobs/s, {drained['cpu_ms'] / naive['cpu_ms']:.2f}x the CPU per job in this process"
    if drained["db_cpu_ms"] is not None and naive["db_cpu_ms"]:
        ratios += f", {drained['db_cpu_ms'] / naive['db_cpu_ms']:.2f}x in the database server"
    print(f"  {ratios}")
    print(f"  enqueue -> done, one by one: p50 {statistics.median(latency):.1f} ms   p99 {percentile(latency, 0.99):.1f} ms   ({len(latency)} jobs)")
    bad = {phase: counts for phase, counts in result["checks"].items() if any(counts.values())}
    undone = {kind: count for kind, count in result["undone"].items() if count}
    print(f"  exactly once: {'NO' if bad or undone else 'yes'} (handler calls by job id: {result['checks']}; jobs not done: {result['undone']})")
    return not bad and not undone


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10000, help="jobs enqueued in batches, then claimed and done; as many for the naive queue")
    parser.add_argument("--batch", type=int, default=100, help="jobs per enqueue_many call")
    parser.add_argument("--single", type=int, default=1000, help="jobs enqueued one per transaction (the latency figure)")
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for a phase's jobs to be done")
    args = parser.parse_args()
    databases = args.databases.split(",")
    ok = True
    if "sqlite" in databases:
        with tempfile.TemporaryDirectory() as folder:
            ok &= report(await run("sqlite", f"sqlite+aiosqlite:///{folder}/bench.db", args), args)
    if "postgresql" in databases:
        server = os.environ.get("PATCHBAY_BENCH_PG_URL") or os.environ.get("PATCHBAY_TEST_DATABASE_URL")
        if server:
            async with scratch_postgres(server) as url:
                ok &= report(await run("postgresql", url, args), args)
        else:
            print("[postgresql] skipped: set PATCHBAY_TEST_DATABASE_URL or PATCHBAY_BENCH_PG_URL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
