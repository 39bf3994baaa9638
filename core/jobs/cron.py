"""Periodic jobs: the work behind ``/api/cron/<name>``.

Features register a :class:`CronJob`. The built-in scheduler (``PATCHBAY_SCHEDULER=true``) enqueues
each job once per tick of its interval: the tick is the job's dedupe key, so several processes
scheduling at once still enqueue it once. An external scheduler calls ``GET /api/cron/<name>``
instead, which runs the job at once and answers its summary.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from patchbay.core.jobs.queue import JobContext, JobQueue

log = logging.getLogger(__name__)


@attrs.frozen
class CronJob:
    name: str
    interval_seconds: int
    run: Callable[[Any], Awaitable[dict[str, Any] | None]]  # run(services) -> summary


class CronRegistry:
    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue
        self.jobs: dict[str, CronJob] = {}
        self._last_tick: dict[str, int] = {}

    def add(self, job: CronJob) -> None:
        if job.name in self.jobs:
            raise ValueError(f"cron job {job.name!r} is already registered")
        self.jobs[job.name] = job

        async def handler(context: JobContext) -> None:
            await job.run(context.services)

        self.queue.register(f"cron:{job.name}", handler, max_attempts=1)

    async def tick(self, now: float | None = None) -> list[str]:
        """Enqueue every job whose interval has a new tick; answer the names enqueued."""
        now = time.time() if now is None else now
        enqueued = []
        for job in self.jobs.values():
            tick = int(now // job.interval_seconds)
            if self._last_tick.get(job.name) == tick:
                continue  # this process already offered this tick
            if await self.queue.enqueue_once(f"cron:{job.name}", {"tick": tick}, f"cron:{job.name}:{tick}"):
                enqueued.append(job.name)
            self._last_tick[job.name] = tick
        return enqueued

    async def run_scheduler(self, stop: asyncio.Event, every: float = 1.0) -> None:
        while not stop.is_set():
            try:
                await self.tick()
            except Exception:
                log.exception("scheduling periodic jobs failed")
            try:
                await asyncio.wait_for(stop.wait(), timeout=every)
            except TimeoutError:
                pass
