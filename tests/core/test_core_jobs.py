"""The durable job queue on SQLite and PostgreSQL, its workers and the periodic scheduler."""

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from patchbay.core.jobs.cron import CronJob, CronRegistry
from patchbay.core.jobs.models import Job
from patchbay.core.jobs.queue import JobQueue, PermanentFailure, RetryLater, concatenating
from patchbay.core.jobs.worker import Worker
from patchbay.core.storage.db import Database

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)


async def run_until(worker: Worker, condition, timeout: float = 10.0) -> None:
    task = asyncio.create_task(worker.run())
    deadline = time.monotonic() + timeout
    try:
        while not await condition():
            assert time.monotonic() < deadline, "condition not reached in time"
            await asyncio.sleep(0.02)
    finally:
        worker.stop()
        await task


async def statuses(db) -> dict[str, str]:
    async with db.session() as session:
        return dict((await session.execute(select(Job.kind, Job.status))).all())


async def test_job_is_enqueued_with_the_transaction_and_run(db):
    queue = JobQueue(db)
    seen = []

    async def handler(ctx):
        seen.append(ctx.payload["n"])

    queue.register("note", handler)
    with pytest.raises(RuntimeError):
        async with db.transaction() as session:
            queue.enqueue(session, "note", {"n": 1})
            raise RuntimeError("the change failed")
    async with db.transaction() as session:
        queue.enqueue(session, "note", {"n": 2})
    await run_until(Worker(None, queue), lambda: _done(db, 1))
    assert seen == [2]
    assert await statuses(db) == {"note": "done"}


async def _done(db, count: int) -> bool:
    async with db.session() as session:
        return await session.scalar(select(func.count()).select_from(Job).where(Job.status == "done")) >= count


async def test_failures_retry_with_backoff_then_fail(db):
    queue = JobQueue(db)
    attempts = []

    async def flaky(ctx):
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ValueError("not yet")

    async def hopeless(ctx):
        raise ValueError("never")

    async def refused(ctx):
        raise PermanentFailure("bad input")

    queue.register("flaky", flaky, backoff_base=0.01)
    queue.register("hopeless", hopeless, max_attempts=2, backoff_base=0.01)
    queue.register("refused", refused)
    async with db.transaction() as session:
        for kind in ("flaky", "hopeless", "refused"):
            queue.enqueue(session, kind)

    async def settled():
        return set((await statuses(db)).values()) <= {"done", "failed"}

    await run_until(Worker(None, queue, poll_seconds=0.01), settled)
    assert attempts == [1, 2, 3]
    assert await statuses(db) == {"flaky": "done", "hopeless": "failed", "refused": "failed"}
    async with db.session() as session:
        job = await session.scalar(select(Job).where(Job.kind == "hopeless"))
    assert job.attempts == 2 and "never" in job.last_error


async def test_retry_later_delays_the_next_attempt(db):
    queue = JobQueue(db)
    times = []

    async def handler(ctx):
        times.append(time.monotonic())
        if ctx.attempt == 1:
            raise RetryLater(0.5)

    queue.register("later", handler)
    async with db.transaction() as session:
        queue.enqueue(session, "later")
    await run_until(Worker(None, queue, poll_seconds=0.05), lambda: _done(db, 1))
    assert len(times) == 2 and times[1] - times[0] >= 0.45


async def test_expired_lease_is_claimed_again(db):
    queue = JobQueue(db, lease_seconds=0.3)
    queue.register("work", lambda ctx: asyncio.sleep(0))
    async with db.transaction() as session:
        queue.enqueue(session, "work")
    [claimed] = await queue.claim("dead-worker", 10)
    assert await queue.claim("other", 10) == []  # leased
    await asyncio.sleep(0.4)
    [again] = await queue.claim("other", 10)
    assert again.id == claimed.id and again.attempts == 2


async def test_cron_tick_is_enqueued_once_across_schedulers(db):
    runs = []

    async def job(app):
        runs.append(app)

    registries = []
    for _ in range(2):  # two processes' schedulers on one database
        registry = CronRegistry(JobQueue(db))
        registry.add(CronJob("token-refresh", 60, job))
        registries.append(registry)
    now = time.time()
    assert await registries[0].tick(now) == ["token-refresh"]
    assert await registries[1].tick(now) == []
    assert await registries[1].tick(now + 60) == ["token-refresh"]
    async with db.session() as session:
        assert await session.scalar(select(func.count()).select_from(Job)) == 2


WORKER_SCRIPT = Path(__file__).with_name("jobs_worker_process.py")


def _start_worker(url: str) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, str(WORKER_SCRIPT), url, "2"], stdout=subprocess.PIPE, text=True, cwd=WORKER_SCRIPT.parent)
    assert process.stdout.readline().strip() == "ready"
    return process


@pytest.mark.slow  # worker processes of their own
async def test_two_worker_processes_do_each_job_once_and_recover_a_killed_workers_job(pg_url):
    db = Database(pg_url)
    queue = JobQueue(db)
    queue.register("effect", lambda ctx: None)
    queue.register("slow", lambda ctx: None)
    try:
        async with db.transaction() as session:
            await session.execute(text("CREATE TABLE job_effects (job_id text, pid int)"))
            queue.enqueue(session, "slow")
        async with db.transaction() as session:
            await queue.enqueue_many(session, "effect", [{"n": n} for n in range(1000)])
        workers = [_start_worker(pg_url), _start_worker(pg_url)]
        try:
            victim = None
            deadline = time.monotonic() + 30
            while victim is None:
                assert time.monotonic() < deadline
                async with db.session() as session:
                    pid = await session.scalar(text("SELECT pid FROM job_effects WHERE job_id = 'started:1'"))
                victim = next((w for w in workers if w.pid == pid), None)
                await asyncio.sleep(0.05)
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            survivor = next(w for w in workers if w is not victim)
            while True:
                assert time.monotonic() < deadline + 30, "jobs did not finish"
                async with db.session() as session:
                    pending = await session.scalar(select(func.count()).select_from(Job).where(Job.status != "done"))
                if pending == 0:
                    break
                await asyncio.sleep(0.1)
            async with db.session() as session:
                effects = (await session.execute(text("SELECT job_id, count(*) FROM job_effects WHERE job_id NOT LIKE 'started:%' GROUP BY job_id"))).all()
                restarted_by = await session.scalar(text("SELECT pid FROM job_effects WHERE job_id = 'started:2'"))
                effect_jobs = await session.scalar(select(func.count()).select_from(Job).where(Job.kind == "effect"))
            assert effect_jobs == 1000
            assert len(effects) == 1000 and all(count == 1 for _, count in effects)
            assert restarted_by == survivor.pid
        finally:
            for process in workers:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
                    process.wait(timeout=20)
    finally:
        await db.close()


async def test_maintenance_purges_old_finished_jobs_only(make_app, aiohttp_client):
    from datetime import timedelta

    from sqlalchemy import update

    from patchbay.core.appkeys import SERVICES
    from patchbay.core.jobs.maintenance import purge
    from patchbay.core.timeutil import utcnow

    app = make_app()
    await aiohttp_client(app)
    queue = app[SERVICES].jobs
    queue.register("old", lambda ctx: None)
    async with app[SERVICES].db.transaction() as session:
        kept, old, pending = (queue.enqueue(session, "old") for _ in range(3))
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(Job).where(Job.id.in_([kept.id, old.id])).values(status="done"))
        await session.execute(update(Job).where(Job.id.in_([old.id, pending.id])).values(updated_at=utcnow() - timedelta(days=8)))
    assert (await purge(app[SERVICES]))["jobsPurged"] == 1
    async with app[SERVICES].db.session() as session:
        assert set(await session.scalars(select(Job.id))) == {kept.id, pending.id}


async def test_a_stopped_worker_ends_in_bounded_time_and_releases_a_job_that_does_not_finish(db):
    queue = JobQueue(db)
    started = asyncio.Event()

    async def endless(ctx):
        started.set()
        await asyncio.Event().wait()

    queue.register("endless", endless)
    async with db.transaction() as session:
        queue.enqueue(session, "endless")
    worker = Worker(None, queue, poll_seconds=0.05, grace_seconds=0.2)
    task = asyncio.create_task(worker.run())
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()  # what asyncio.Runner.close and a SIGTERM'd server do
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    async with db.session() as session:
        job = await session.scalar(select(Job))
    assert (job.status, job.attempts, job.locked_by, job.lease_until) == ("queued", 0, None, None)
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and "Worker" in repr(t.get_coro())] == []


async def test_a_failing_lease_extension_is_logged(db, caplog):
    queue = JobQueue(db, lease_seconds=0.15)
    started = asyncio.Event()

    async def slow(ctx):
        started.set()
        await asyncio.sleep(0.5)

    async def broken(worker_id, job_ids):
        raise ConnectionError("database unreachable")

    queue.register("slow", slow)
    async with db.transaction() as session:
        queue.enqueue(session, "slow")
    queue.extend_leases = broken
    await run_until(Worker(None, queue, poll_seconds=0.05), lambda: _done(db, 1))
    assert any("extending the leases" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_a_stop_while_the_database_is_gone_still_ends_and_says_what_it_left(db, caplog):
    """The final bookkeeping of a stop (release the unfinished, mark the finished done) may find the
    database gone; the stop still ends, and the log says the leases will hand the jobs on."""
    queue = JobQueue(db)
    started = asyncio.Event()

    async def endless(ctx):
        started.set()
        await asyncio.Event().wait()

    async def unreachable(*args, **kwargs):
        raise ConnectionError("database unreachable")

    queue.register("endless", endless)
    async with db.transaction() as session:
        queue.enqueue(session, "endless")
    worker = Worker(None, queue, poll_seconds=0.05, grace_seconds=0.1)
    task = asyncio.create_task(worker.run())
    await asyncio.wait_for(started.wait(), 10)
    worker._done.append("a-finished-job")
    queue.release = queue.mark_done = unreachable
    worker.stop()
    await asyncio.wait_for(task, 10)
    messages = [r.getMessage() for r in caplog.records if r.exc_info]
    assert any("releasing 1 unfinished jobs failed" in m for m in messages), messages
    assert any("marking 1 finished jobs done failed" in m for m in messages), messages


async def test_maintenance_purges_records_past_their_retention_in_batches(make_app, aiohttp_client, monkeypatch):
    from datetime import timedelta

    from patchbay.core.appkeys import SERVICES
    from patchbay.core.connections.models import ProxyCallLog
    from patchbay.core.flows.models import Flow, FlowExecution, FlowExecutionStep
    from patchbay.core.jobs import retention
    from patchbay.core.jobs.maintenance import purge
    from patchbay.core.settings import RetentionSettings
    from patchbay.core.testing import create_workspace_with_key
    from patchbay.core.timeutil import utcnow
    from patchbay.core.webhooks.models import WebhookAttempt, WebhookEvent

    monkeypatch.setattr(retention, "BATCH", 2)  # several batches per kind
    app = make_app(retention=RetentionSettings(webhook_event_days=30, proxy_log_days=7, execution_days=90, delivery_attempt_days=0))
    await aiohttp_client(app)
    ws = (await create_workspace_with_key(app))["workspace_id"]
    now = utcnow()
    old_log, recent_log, old_event, old_run, _running = (
        now - timedelta(days=8),
        now - timedelta(days=6),
        now - timedelta(days=31),
        now - timedelta(days=91),
        now - timedelta(days=200),
    )
    async with app[SERVICES].db.transaction() as session:
        flow = Flow(workspace_id=ws, name="f")
        session.add(flow)
        await session.flush()
        for n, at in enumerate([old_log] * 5 + [recent_log]):
            session.add(
                ProxyCallLog(
                    workspace_id=ws, connection_id="c", provider="p", source="proxy", method="GET", path=f"/{n}", status=200, duration_ms=1.0, created_at=at
                )
            )
        for n, at in enumerate([old_event] * 3 + [now]):
            session.add(WebhookEvent(workspace_id=ws, provider="facebook", status="PROCESSED", body=f"body {n}", body_hash=str(n), created_at=at))
        session.add(WebhookEvent(workspace_id=ws, provider="facebook", status="RECEIVED", body="not processed yet", body_hash="r", created_at=old_event))
        for n in range(3):
            session.add(WebhookAttempt(workspace_id=ws, delivery_id="d", number=n, created_at=old_event))
        executions = [
            FlowExecution(workspace_id=ws, flow_id=flow.id, status=status, trigger_source="manual", finished_at=at)
            for status, at in [("completed", old_run), ("failed", old_run), ("completed", old_run), ("completed", now), ("running", None)]
        ]
        session.add_all(executions)
        await session.flush()
        for execution in executions:
            session.add(FlowExecutionStep(workspace_id=ws, execution_id=execution.id, position=0, step_id="s", type="log", status="completed"))
    result = await purge(app[SERVICES])
    assert {k: result[k] for k in ("webhookEventBodiesCleared", "proxyCallLogsPurged", "executionsPurged", "deliveryAttemptsPurged")} == {
        "webhookEventBodiesCleared": 3,
        "proxyCallLogsPurged": 5,
        "executionsPurged": 3,
        "deliveryAttemptsPurged": 0,
    }
    async with app[SERVICES].db.session() as session:
        assert list(await session.scalars(select(ProxyCallLog.created_at))) == [recent_log]
        bodies = dict((await session.execute(select(WebhookEvent.body_hash, WebhookEvent.body))).all())
        assert bodies == {"0": None, "1": None, "2": None, "3": "body 3", "r": "not processed yet"}
        kept = set(await session.scalars(select(FlowExecution.id)))
        assert kept == {executions[3].id, executions[4].id}
        assert set(await session.scalars(select(FlowExecutionStep.execution_id))) == kept
        assert await session.scalar(select(func.count()).select_from(WebhookAttempt)) == 3  # 0 days: kept forever


async def test_first_attempts_of_a_merged_kind_run_as_one_call_and_a_failure_retries_each(db):
    queue = JobQueue(db)
    calls = []

    async def handler(ctx):
        calls.append((sorted(ctx.payload["ids"]), ctx.attempt))
        if len(calls) == 1:
            raise RuntimeError("the merged call failed")

    queue.register("batch", handler, backoff_base=0.01, merge=concatenating("ids"))
    async with db.transaction() as session:
        for n in range(5):
            queue.enqueue(session, "batch", {"ids": [n, n + 10]})
    await run_until(Worker(None, queue, concurrency=16), lambda: _done(db, 5))
    assert calls[0] == ([0, 1, 2, 3, 4, 10, 11, 12, 13, 14], 1)  # one call for the five jobs
    assert sorted(ids for ids, _ in calls[1:]) == [[n, n + 10] for n in range(5)]  # retried one by one
    assert all(attempt == 2 for _, attempt in calls[1:])
