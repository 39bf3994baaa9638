"""Fair shares of the render threads between workspaces.

Renders that need a worker thread wait here, per workspace. A free thread takes a batch (one thread
hop for many renders) from the workspaces that used the least render CPU lately, so a workspace
whose templates burn CPU, or many such workspaces, go behind one that rarely renders instead of
ahead of it. A batch ends after ``BATCH_CPU_SECONDS`` of CPU: the renders it did not reach go back
to the front of their workspaces' queues and are chosen again against everyone else's.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Any

#: CPU a batch may spend before its remaining renders are handed back (one render may run past it,
#: up to the sandbox's CPU bound of one render)
BATCH_CPU_SECONDS = 0.05
#: renders of one batch at most
MAX_BATCH = 256
#: a workspace's recent render CPU halves every this many seconds
USAGE_HALF_LIFE_SECONDS = 10.0
#: workspaces remembered with a recent CPU before the negligible ones are forgotten
MAX_REMEMBERED = 1024

Item = Any
#: ``render_batch(items) -> [(result, cpu_seconds), ...]`` for a prefix of ``items`` (run in a thread)
RenderBatch = Callable[[list[Item]], list[tuple[Any, float]]]


def render_prefix(items: list[Item], render_one: Callable[[Item], Any]) -> list[tuple[Any, float]]:
    """Render ``items`` in order until they have spent ``BATCH_CPU_SECONDS`` of this thread's CPU:
    each result (an exception is a result) with the CPU it took."""
    done: list[tuple[Any, float]] = []
    spent = 0.0
    for item in items:
        if spent >= BATCH_CPU_SECONDS:
            break
        began = time.thread_time()
        try:
            result = render_one(item)
        except Exception as error:  # noqa: PERF203 - each render fails alone
            result = error
        cpu = time.thread_time() - began
        spent += cpu
        done.append((result, cpu))
    return done


class FairRenderQueue:
    """Runs ``render_batch`` in up to ``threads`` worker threads at once over the renders submitted
    by workspaces, choosing whose renders go next by their recent render CPU (least first)."""

    def __init__(self, render_batch: RenderBatch, *, threads: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._render_batch = render_batch
        self._threads = threads
        self._clock = clock
        self._waiting: dict[str, deque[tuple[Item, asyncio.Future]]] = {}
        self._usage: dict[str, tuple[float, float]] = {}  # workspace -> (CPU seconds, as of)
        self._running: set[asyncio.Task] = set()
        self._pump_scheduled = False

    async def submit(self, workspace_id: str, item: Item) -> Any:
        """The render of ``item`` (raised when it is an exception)."""
        future = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(workspace_id, deque()).append((item, future))
        self._schedule_pump()
        result = await future
        if isinstance(result, Exception):
            raise result
        return result

    def usage(self, workspace_id: str) -> float:
        """The workspace's render CPU, halved every ``USAGE_HALF_LIFE_SECONDS``."""
        spent, as_of = self._usage.get(workspace_id, (0.0, 0.0))
        return spent * 0.5 ** ((self._clock() - as_of) / USAGE_HALF_LIFE_SECONDS)

    def _charge(self, workspace_id: str, cpu: float) -> None:
        self._usage[workspace_id] = (self.usage(workspace_id) + cpu, self._clock())
        if len(self._usage) > MAX_REMEMBERED:
            for name in [name for name in self._usage if name not in self._waiting and self.usage(name) < 0.001]:
                del self._usage[name]

    def _schedule_pump(self) -> None:
        # on the next turn of the loop: the renders submitted in this turn join one batch
        if not self._pump_scheduled:
            self._pump_scheduled = True
            asyncio.get_running_loop().call_soon(self._pump)

    def _pump(self) -> None:
        self._pump_scheduled = False
        while len(self._running) < self._threads and self._waiting:
            batch = self._take()
            task = asyncio.create_task(self._run(batch))
            self._running.add(task)
            task.add_done_callback(self._ran)

    def _ran(self, task: asyncio.Task) -> None:
        self._running.discard(task)
        if self._waiting:
            self._schedule_pump()

    def _take(self) -> list[tuple[str, Item, asyncio.Future]]:
        """The next batch: the waiting renders of the workspaces with the least recent CPU first."""
        batch: list[tuple[str, Item, asyncio.Future]] = []
        for workspace_id in sorted(self._waiting, key=self.usage):
            queue = self._waiting[workspace_id]
            while queue and len(batch) < MAX_BATCH:
                item, future = queue.popleft()
                batch.append((workspace_id, item, future))
            if not queue:
                del self._waiting[workspace_id]
            if len(batch) >= MAX_BATCH:
                break
        return batch

    async def _run(self, batch: list[tuple[str, Item, asyncio.Future]]) -> None:
        try:
            done = await asyncio.to_thread(self._render_batch, [item for _, item, _ in batch])
        except asyncio.CancelledError:  # the process stops: none of the batch's submitters waits on
            for _, _, future in batch:
                future.cancel()
            raise
        except Exception as error:  # the batch itself failed: each of its renders fails with it
            done = [(error, 0.0)] * len(batch)
        for (workspace_id, _, future), (result, cpu) in zip(batch, done, strict=False):
            self._charge(workspace_id, cpu)
            if not future.done():
                future.set_result(result)
        for workspace_id, item, future in reversed(batch[len(done) :]):  # not reached: first again
            self._waiting.setdefault(workspace_id, deque()).appendleft((item, future))
