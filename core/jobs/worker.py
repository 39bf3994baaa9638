"""Workers: claim jobs, run their handlers concurrently, and record the outcome."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator
from typing import Any

from patchbay.core.jobs.queue import JobContext, JobQueue, LostLease, PermanentFailure
from patchbay.core.timeutil import new_id

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5
DONE_FLUSH_SECONDS = 0.005
#: how long running jobs may take to finish once the worker stops, before they are cancelled
GRACE_SECONDS = 5.0


class Worker:
    """Runs up to ``concurrency`` jobs at once until ``stop()``. Finished jobs are marked done in
    batches, so a burst of short jobs costs one UPDATE per batch, not one per job."""

    def __init__(
        self, services: Any, queue: JobQueue, *, concurrency: int = 16, poll_seconds: float = POLL_SECONDS, grace_seconds: float = GRACE_SECONDS
    ) -> None:
        self.services = services
        self.grace_seconds = grace_seconds
        self.queue = queue
        self.concurrency = concurrency
        self.poll_seconds = poll_seconds
        self.id = f"{socket.gethostname()}:{os.getpid()}:{new_id()[:8]}"
        self._running: dict[str, asyncio.Task] = {}
        self._done: list[str] = []
        self._done_event = asyncio.Event()
        self._stopping = asyncio.Event()

    async def run(self) -> None:
        """Claim and run jobs until :meth:`stop` (or cancellation). On the way out, running jobs get
        ``grace_seconds`` to finish; the rest are cancelled and released for another worker, so a
        stop always ends in bounded time and leaves no job claimed by a process that is gone."""
        flusher = asyncio.create_task(self._flush_done_loop())
        heartbeat = asyncio.create_task(self._heartbeat_loop())
        try:
            while not self._stopping.is_set():
                free = self.concurrency - len(self._running)
                jobs: list[Any] = []
                if free > 0:
                    self.queue.wake.clear()
                    try:
                        jobs = await self.queue.claim(self.id, free)
                    except Exception:
                        log.exception("claiming jobs failed")
                for group in self._groups(jobs):
                    task = asyncio.create_task(self._run(group))
                    for job in group:
                        self._running[job.id] = task
                if not jobs or len(self._running) >= self.concurrency:
                    await self._idle()
        finally:
            await self._wind_down(flusher, heartbeat)

    async def _wind_down(self, *helpers: asyncio.Task) -> None:
        running = dict(self._running)
        if running:
            _, late = await asyncio.wait(list(running.values()), timeout=self.grace_seconds)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)
                unfinished = [job_id for job_id, task in running.items() if task in late]
                try:
                    await self.queue.release(self.id, unfinished)
                    log.warning("stopping: released %d unfinished jobs for another worker", len(unfinished))
                except Exception:
                    log.exception("releasing %d unfinished jobs failed; they are claimed again when their leases run out", len(unfinished))
        for helper in helpers:
            helper.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)
        finished = len(self._done)
        try:
            await self._flush_done()
        except Exception:
            log.exception("marking %d finished jobs done failed; they run again when their leases run out", finished)

    async def _idle(self) -> None:
        """Wait for a reason to claim again: new jobs (only when a slot is free: a full worker woken
        by every commit that queues a job would only spin), a running call ending, stopping, or the
        poll interval."""
        waits = [asyncio.ensure_future(self._stopping.wait())]
        if len(self._running) < self.concurrency:
            waits.append(asyncio.ensure_future(self.queue.wake.wait()))
        if self._running:
            waits.append(asyncio.ensure_future(asyncio.wait(set(self._running.values()), return_when=asyncio.FIRST_COMPLETED)))
        try:
            await asyncio.wait(waits, timeout=self.poll_seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waits:
                waiter.cancel()

    def stop(self) -> None:
        self._stopping.set()

    def _groups(self, jobs: list[Any]) -> list[list[Any]]:
        """The claimed jobs as handler calls: the first attempts of a kind with ``merge`` together,
        every other job alone."""
        groups: list[list[Any]] = []
        merged: dict[str, list[Any]] = {}
        for job in jobs:
            if self.queue.kinds[job.kind].merge is not None and job.attempts == 1:
                merged.setdefault(job.kind, []).append(job)
            else:
                groups.append([job])
        return groups + list(merged.values())

    def _context(self, jobs: list[Any]) -> JobContext:
        first = jobs[0]
        if len(jobs) == 1:
            return JobContext(self.services, first.id, first.kind, dict(first.payload), first.attempts, first.max_attempts, first.workspace_id)
        payload = self.queue.kinds[first.kind].merge([dict(job.payload) for job in jobs])
        return JobContext(self.services, first.id, first.kind, payload, 1, min(job.max_attempts for job in jobs), None)

    async def _run(self, jobs: list[Any]) -> None:
        job = jobs[0]
        try:
            if job.attempts > job.max_attempts:
                await self.queue.mark_failed(self.id, job, job.last_error or "attempts exhausted", None)
                return
            kind = self.queue.kinds[job.kind]
            context = self._context(jobs)
            try:
                if kind.transactional:
                    async with self.queue.db.transaction() as session:
                        context.session = session
                        await kind.handler(context)
                        await self.queue.mark_done_in(session, self.id, job.id)
                    return
                await kind.handler(context)
            except asyncio.CancelledError:
                raise
            except LostLease:
                log.warning("job %s was claimed by another worker; its work here was rolled back", job.id)
            except Exception as error:
                for one in jobs:
                    retry_in = self.queue.retry_delay(one, error)
                    level = logging.INFO if retry_in is not None or isinstance(error, PermanentFailure) else logging.ERROR
                    log.log(level, "job %s (%s) attempt %s failed: %r", one.id, one.kind, one.attempts, error, exc_info=level >= logging.ERROR)
                    await self.queue.mark_failed(self.id, one, repr(error), retry_in)
            else:
                self._done.extend(one.id for one in jobs)
                self._done_event.set()
        except Exception:
            log.exception("recording the outcome of job %s failed", job.id)
        finally:
            for one in jobs:
                self._running.pop(one.id, None)

    async def _flush_done(self) -> None:
        done, self._done = self._done, []
        self._done_event.clear()
        if done:
            await self.queue.mark_done(self.id, done)

    async def _flush_done_loop(self) -> None:
        while True:
            await self._done_event.wait()
            await asyncio.sleep(DONE_FLUSH_SECONDS)
            try:
                await self._flush_done()
            except Exception:
                log.exception("marking jobs done failed")

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.queue.lease_seconds / 3)
            try:
                await self.queue.extend_leases(self.id, list(self._running))
            except Exception:
                log.warning("extending the leases of %d running jobs failed; another worker may claim them", len(self._running), exc_info=True)


@contextlib.asynccontextmanager
async def background_work(services: Any, *, scheduler: bool | None = None) -> AsyncIterator[None]:
    """Run ``settings.workers`` concurrent jobs and, when ``settings.scheduler`` (or ``scheduler``
    when given: one of several processes of ``patchbay serve`` runs it), the periodic scheduler,
    until the block ends (the worker bounds its own stop: grace, then cancel and release)."""
    settings = services.settings
    scheduler = settings.scheduler if scheduler is None else scheduler
    stop = asyncio.Event()
    tasks = []
    worker = None
    if settings.workers > 0:
        worker = Worker(services, services.jobs, concurrency=settings.workers)
        tasks.append(asyncio.create_task(worker.run(), name="patchbay-worker"))
    if scheduler:
        log.info("periodic scheduler started")
        tasks.append(asyncio.create_task(services.cron.run_scheduler(stop), name="patchbay-scheduler"))
    try:
        yield
    finally:
        stop.set()
        if worker is not None:
            worker.stop()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, timeout=10)
