"""The render threads shared fairly between workspaces (``core/flows/render_queue.py``)."""

from __future__ import annotations

import asyncio
import threading
import time

from patchbay.core.flows.render_queue import BATCH_CPU_SECONDS, FairRenderQueue, render_prefix

WAIT_SECONDS = 20


def _burn(seconds: float) -> None:
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


async def test_a_workspace_that_rendered_little_goes_before_one_that_burnt_the_cpu():
    """A first-come queue put a quiet workspace's render behind every render queued before it."""
    held, release, batches = threading.Event(), threading.Event(), []

    def render_batch(items):
        batches.append([name for name, _ in items])
        if not held.is_set():
            held.set()
            assert release.wait(WAIT_SECONDS)
        return [(name, cpu) for name, cpu in items]  # each render "took" the CPU it names

    queue = FairRenderQueue(render_batch, threads=1)
    first = asyncio.create_task(queue.submit("burner", ("burner 1", 1.0)))
    assert await asyncio.to_thread(held.wait, WAIT_SECONDS)
    later = [asyncio.create_task(queue.submit("burner", (f"burner {n}", 1.0))) for n in (2, 3)]
    quiet = asyncio.create_task(queue.submit("quiet", ("quiet 1", 0.001)))
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.wait_for(asyncio.gather(first, *later, quiet), WAIT_SECONDS) == ["burner 1", "burner 2", "burner 3", "quiet 1"]
    assert batches == [["burner 1"], ["quiet 1", "burner 2", "burner 3"]]
    assert queue.usage("burner") > queue.usage("quiet")


def test_a_batch_stops_once_it_has_spent_its_cpu():
    done = render_prefix([BATCH_CPU_SECONDS * 0.6] * 5, lambda seconds: _burn(seconds) or seconds)
    assert len(done) == 2
    assert all(cpu >= BATCH_CPU_SECONDS * 0.6 for _, cpu in done)


async def test_the_renders_a_batch_did_not_reach_come_back_in_order():
    queue = FairRenderQueue(lambda items: render_prefix(items, lambda n: _burn(BATCH_CPU_SECONDS * 0.6) or n), threads=2)
    results = await asyncio.wait_for(asyncio.gather(*(queue.submit("one", n) for n in range(6))), WAIT_SECONDS)
    assert results == list(range(6))


async def test_a_failed_render_fails_alone():
    def render_one(n):
        if n == 1:
            raise ValueError("bad template")
        return n

    queue = FairRenderQueue(lambda items: render_prefix(items, render_one), threads=1)
    outcomes = await asyncio.gather(*(queue.submit("one", n) for n in range(3)), return_exceptions=True)
    assert outcomes[0] == 0 and outcomes[2] == 2
    assert isinstance(outcomes[1], ValueError)
