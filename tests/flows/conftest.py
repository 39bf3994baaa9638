"""Fixtures of the flow tests: an app on either database, a client, a workspace, and ``drain`` to run
queued jobs in the test's own task (no background workers)."""

from __future__ import annotations

from typing import Any

import pytest

from patchbay.core.appkeys import JOBS
from patchbay.core.jobs.queue import JobContext
from patchbay.core.testing import create_workspace_with_key


async def drain(app, *, rounds: int = 50, kinds: tuple[str, ...] | None = None) -> int:
    """Run queued jobs (and those they enqueue) until none is due; answers how many ran."""
    queue = app[JOBS]
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
            context = JobContext(app, job.id, job.kind, dict(job.payload), job.attempts, job.max_attempts, job.workspace_id)
            await queue.kinds[job.kind].handler(context)
            ran += 1
        await queue.mark_done("test-drain", [j.id for j in jobs])
    return ran


@pytest.fixture
def drain_jobs():
    return drain


@pytest.fixture
async def flows_client(aiohttp_client, make_app, database_url):
    """A client of an app on SQLite and on PostgreSQL (parametrised)."""
    return await aiohttp_client(make_app(database_url=database_url))


@pytest.fixture
async def flows_ws(flows_client) -> dict[str, Any]:
    return await create_workspace_with_key(flows_client.server.app)
