"""Helpers for tests and benchmarks of flows: run queued jobs in the caller's task."""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchbay.core.jobs.queue import JobContext

if TYPE_CHECKING:
    from patchbay.core.services import Services


async def drain(services: Services, *, rounds: int = 50, kinds: tuple[str, ...] | None = None) -> int:
    """Run due jobs (and the jobs they enqueue) until none is left; answers how many ran. Jobs of
    other ``kinds`` are marked done unrun. A handler's exception propagates (no retry)."""
    queue = services.jobs
    ran = 0
    for _ in range(rounds):
        jobs = await queue.claim("test-drain", 200)
        if kinds is not None:
            skipped = [j for j in jobs if j.kind not in kinds]
            if skipped:
                await queue.mark_done("test-drain", [j.id for j in skipped])
            jobs = [j for j in jobs if j.kind in kinds]
        if not jobs:
            return ran
        for job in jobs:
            context = JobContext(services, job.id, job.kind, dict(job.payload), job.attempts, job.max_attempts, job.workspace_id)
            await queue.kinds[job.kind].handler(context)
            ran += 1
        await queue.mark_done("test-drain", [j.id for j in jobs])
    return ran
