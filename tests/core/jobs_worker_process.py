"""A worker process for the multi-process job queue test (run by test_core_jobs.py, not collected).

Usage: python jobs_worker_process.py DATABASE_URL LEASE_SECONDS
Kinds: ``effect`` writes one row to ``job_effects`` in the job's own transaction; ``slow`` writes a
``started`` row, then sleeps for an hour on its first attempt (so the test can kill its worker), and
finishes at once on a later attempt.
"""

import asyncio
import os
import signal
import sys

from sqlalchemy import text

from patchbay.core.jobs.queue import JobQueue
from patchbay.core.jobs.worker import Worker
from patchbay.core.storage.db import Database


async def main(url: str, lease: float) -> None:
    db = Database(url)
    queue = JobQueue(db, lease_seconds=lease)

    async def effect(ctx):
        await ctx.session.execute(text("INSERT INTO job_effects (job_id, pid) VALUES (:j, :p)"), {"j": ctx.job_id, "p": os.getpid()})

    async def slow(ctx):
        async with db.transaction() as session:
            await session.execute(text("INSERT INTO job_effects (job_id, pid) VALUES (:j, :p)"), {"j": f"started:{ctx.attempt}", "p": os.getpid()})
        if ctx.attempt == 1:
            await asyncio.sleep(3600)

    queue.register("effect", effect, transactional=True)
    queue.register("slow", slow)
    worker = Worker(None, queue, concurrency=8, poll_seconds=0.05)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, worker.stop)
    print("ready", flush=True)
    await worker.run()
    await db.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2])))
