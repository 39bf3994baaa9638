"""What concurrent executions of one process share: group commit of their database work (starts,
finishes, checkpoints, table lookups), their template renders (one worker thread hop per batch,
the threads shared fairly between workspaces) and the plans of published versions."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs
from sqlalchemy import select

from patchbay.core.flows import store
from patchbay.core.flows.loop_progress import ItemCheckpoints
from patchbay.core.flows.models import FlowVersion
from patchbay.core.flows.plan import PlanCache, StepPlan
from patchbay.core.flows.render_queue import FairRenderQueue, render_prefix
from patchbay.core.flows.templating import HEAVY, Compiled, deadline
from patchbay.core.timeutil import utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

#: sessions opened by steps at once; more would overflow the connection pool, and on PostgreSQL
#: every overflow connection is a new server process, opened and closed again
STEP_SESSIONS = 8
#: batches of renders run at once, each in a worker thread, chosen fairly between workspaces
#: (``render_queue``): a heavy template holds up its own batch for at most ``templating``'s CPU bound
#: of one render
RENDER_THREADS = 4
#: renders of one workspace in the render threads' batches at once: one tenant's heavy templates
#: cannot fill every render thread, its other renders wait their turn
RENDERS_PER_WORKSPACE = RENDER_THREADS // 2
#: how long a running execution's lease lasts; the process running it renews the leases of all its
#: executions every third of this (one UPDATE), the reaper (``durable``) takes those that ran out
LEASE_SECONDS = 60.0


@attrs.define
class StepRecord:
    position: int
    step_id: str
    type: str
    status: str
    input: Any = None
    output: Any = None
    error: str | None = None
    started_at: Any = None
    finished_at: Any = None
    duration_ms: int | None = None
    written: bool = False

    def values(self) -> tuple[Any, ...]:
        """The record's columns in ``store.STEP_COLUMNS`` order after the execution's two."""
        return (self.position, self.step_id, self.type, self.status, self.input, self.output, self.error, self.started_at, self.finished_at, self.duration_ms)


def step_rows(records: list[StepRecord], workspace_id: str, execution_id: str) -> list[tuple[Any, ...]]:
    """The rows of the records not stored yet, in ``store.STEP_COLUMNS`` order."""
    return [(workspace_id, execution_id, *record.values()) for record in records if not record.written]


@attrs.define
class Outcome:
    status: str
    error: str | None
    records: list[StepRecord]


class Batcher:
    """Group commit: items submitted while a flush is running are flushed together by the next
    ``flush(items) -> results`` call, so concurrent executions share one transaction. A result that
    is an exception is raised to its submitter alone."""

    def __init__(self, flush, *, max_batch: int = 256) -> None:
        self._flush = flush
        self._max = max_batch
        self._pending: list[tuple[Any, asyncio.Future]] = []
        self._task: asyncio.Task | None = None
        #: one flush at a time: the next batch grows meanwhile
        self._slots = asyncio.Semaphore(1)
        self._flushing: set[asyncio.Task] = set()

    async def submit(self, item: Any) -> Any:
        future = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._drain())
        result = await future
        if isinstance(result, Exception):
            raise result
        return result

    async def _drain(self) -> None:
        while self._pending:
            await asyncio.sleep(0)  # let callers resumed in this loop iteration join the batch
            await self._slots.acquire()  # the batch grows while every slot is busy
            batch, self._pending = self._pending[: self._max], self._pending[self._max :]
            task = asyncio.create_task(self._flush_batch(batch))
            self._flushing.add(task)
            task.add_done_callback(self._flushed)

    def _flushed(self, task: asyncio.Task) -> None:
        self._flushing.discard(task)
        self._slots.release()

    async def _flush_batch(self, batch: list[tuple[Any, asyncio.Future]]) -> None:
        try:
            results = await self._flush([item for item, _ in batch])
        except Exception as error:
            if len(batch) > 1:
                for one in batch:  # one bad item must not fail the others
                    await self._flush_batch([one])
            elif not batch[0][1].done():
                batch[0][1].set_exception(error)
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)


@attrs.define
class _Finish:
    execution: dict[str, Any]
    outcome: Outcome
    alerts: bool


def _render_one(item: tuple[Compiled, dict[str, Any], float]) -> Any:
    compiled, context, until = item
    with deadline(until):
        return compiled.render(context)


def _render_all(items: list[tuple[Compiled, dict[str, Any], float]]) -> list[tuple[Any, float]]:
    """In a render thread: the renders of a batch, in order, for as long as its CPU allows."""
    return render_prefix(items, _render_one)


def _render_batch(items: list[tuple[Compiled, dict[str, Any], float]]) -> list[tuple[Any, float]]:
    return _render_all(items)  # looked up at each call: tests hold a batch by replacing it


class _Turns:
    """The render slots of one workspace, forgotten when none of its renders waits or runs."""

    __slots__ = ("slots", "users")

    def __init__(self) -> None:
        self.slots = asyncio.Semaphore(RENDERS_PER_WORKSPACE)
        self.users = 0


class FlowRunner:
    """Runs executions for one set of services: their database work and renders batched, their
    plans cached."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.plans = PlanCache(services.registry, self._version_steps)
        self._steps = store.StepWriter()
        self._starts = Batcher(self._start_many)
        self._finishes = Batcher(self._finish_many)
        self._lookups = Batcher(self._lookup_many)
        self._checkpoints = Batcher(self._checkpoint_many)
        self.loop_items = ItemCheckpoints(self._write_loop_items)
        #: the executions running here that have completed loop items stored (``loop_progress``):
        #: deleted with their loop's record, the rest when the execution ends
        self.with_loop_items: set[str] = set()
        self._renders = FairRenderQueue(_render_batch, threads=RENDER_THREADS)
        self._workspace_renders: dict[str, _Turns] = {}
        self.step_sessions = asyncio.Semaphore(STEP_SESSIONS)
        self.lease_seconds = LEASE_SECONDS
        #: the executions this process runs now, whose leases it renews
        self.running: set[str] = set()
        self._renewing: asyncio.Task | None = None

    async def plan(self, flow_id: str, version: int) -> list[StepPlan]:
        return await self.plans.get(flow_id, version)

    async def _version_steps(self, flow_id: str, version: int) -> list[dict[str, Any]] | None:
        async with self.services.db.session() as session:
            return await session.scalar(select(FlowVersion.steps).where(FlowVersion.flow_id == flow_id, FlowVersion.version == version))

    # -- rendering -------------------------------------------------------------------------------

    async def render(self, config: Compiled, context: dict[str, Any], timeout: float, workspace_id: str) -> Any:
        """Render a step's configuration. One whose templates are all light (paths into the data,
        see ``templating.light_path``) renders here, on the event loop, in a few lookups; any other
        in a worker thread (a heavy template must not block the event loop), together with the
        renders of the steps running alongside, stopping ``timeout`` seconds from now; at most
        ``RENDERS_PER_WORKSPACE`` of the workspace's at once."""
        if config.light is not None:
            value = config.light(context)
            if value is not HEAVY:
                return value
        until = time.monotonic() + timeout
        turns = self._workspace_renders.get(workspace_id)
        if turns is None:
            turns = self._workspace_renders[workspace_id] = _Turns()
        turns.users += 1
        try:
            async with turns.slots:
                return await self._renders.submit(workspace_id, (config, context, until))
        finally:
            turns.users -= 1
            if not turns.users:
                del self._workspace_renders[workspace_id]

    # -- starting and finishing ------------------------------------------------------------------

    async def start(self, execution_id: str) -> dict[str, Any] | None:
        """Mark the execution running (again, when resumed), leased to this process until it ends
        (``release``); None when it has already ended."""
        started = await self._starts.submit(execution_id)
        if started is not None:
            self.hold(execution_id)
        return started

    async def _start_many(self, ids: list[str]) -> list[dict[str, Any] | None]:
        now = utcnow()
        async with self.services.db.engine.begin() as connection:
            started = await store.start(connection, ids, now, self.lease_until(now))
        return [started.get(execution_id) for execution_id in ids]

    # -- leases ----------------------------------------------------------------------------------

    def lease_until(self, now: Any) -> Any:
        return now + timedelta(seconds=self.lease_seconds)

    def hold(self, execution_id: str) -> None:
        """Renew the execution's lease while this process runs it."""
        self.running.add(execution_id)
        if self._renewing is None or self._renewing.done():
            self._renewing = asyncio.create_task(self._renew_loop())

    def release(self, execution_id: str) -> None:
        self.running.discard(execution_id)
        self.with_loop_items.discard(execution_id)

    async def _renew_loop(self) -> None:
        """Every third of a lease, extend the leases of the executions running here; ends when
        none runs (``hold`` starts it again)."""
        while self.running:
            await asyncio.sleep(self.lease_seconds / 3)
            if not self.running:
                return
            try:
                async with self.services.db.engine.begin() as connection:
                    await store.renew(connection, sorted(self.running), self.lease_until(utcnow()))
            except Exception:  # the database went away for a moment: try again next time
                log.warning("renewing execution leases failed", exc_info=True)

    async def finish(self, execution: dict[str, Any], outcome: Outcome, *, alerts: bool) -> bool:
        """Record the outcome; False when another run had already finished the execution."""
        return await self._finishes.submit(_Finish(execution, outcome, alerts))

    async def _finish_many(self, items: list[_Finish]) -> list[bool]:
        from patchbay.core.alerts.service import enqueue_alerts
        from patchbay.core.flows.error_flows import start_error_flows

        now = utcnow()
        outcomes = [
            (i.execution["id"], i.outcome.status, i.outcome.error, int((now - (i.execution["started_at"] or now)).total_seconds() * 1000)) for i in items
        ]
        async with self.services.db.transaction() as session:
            connection = await session.connection()
            finished = await store.finish(connection, outcomes, now)
            ended = [item for item in items if item.execution["id"] in finished]
            await self._steps.insert(connection, [row for i in ended for row in step_rows(i.outcome.records, i.execution["workspace_id"], i.execution["id"])])
            await store.delete_loop_items(connection, [i.execution["id"] for i in ended if i.execution["id"] in self.with_loop_items])
            alerting = [
                {
                    "workspace_id": i.execution["workspace_id"],
                    "flow_id": i.execution["flow_id"],
                    "execution_id": i.execution["id"],
                    "status": i.outcome.status,
                    "error": i.outcome.error,
                }
                for i in ended
                if i.alerts
            ]
            await enqueue_alerts(self.services, session, alerting)
            failures = [(i.execution, i.outcome) for i in ended if i.alerts and i.outcome.status == "failed"]
            if failures:
                await start_error_flows(self.services, session, failures)
        return [item.execution["id"] in finished for item in items]

    # -- steps' database work --------------------------------------------------------------------

    async def lookup(self, workspace_id: str, table_slug: str, column: str, value: Any) -> dict[str, Any] | None:
        """The ``table.lookup`` of one execution, answered with those of the executions running
        alongside: one session and three queries per workspace in the batch."""
        return await self._lookups.submit((workspace_id, table_slug, column, value))

    async def _lookup_many(self, items: list[tuple[str, str, str, Any]]) -> list[Any]:
        from patchbay.core.tables.service import lookup_rows

        by_workspace: dict[str, list[int]] = {}
        for index, item in enumerate(items):
            by_workspace.setdefault(item[0], []).append(index)
        results: list[Any] = [None] * len(items)
        for workspace_id, indexes in by_workspace.items():
            async with self.step_sessions, self.services.db.session(tenant=workspace_id) as session:
                found = await lookup_rows(session, workspace_id=workspace_id, lookups=[items[i][1:] for i in indexes])
            for index, result in zip(indexes, found, strict=True):
                results[index] = result
        return results

    async def checkpoint(self, rows: list[tuple[Any, ...]]) -> None:
        """Store finished steps' records; concurrent executions' checkpoints share a transaction."""
        await self._checkpoints.submit(rows)

    async def _checkpoint_many(self, batches: list[list[tuple[Any, ...]]]) -> list[None]:
        rows = [row for rows in batches for row in rows]
        # a loop's record holds its items' results: its stored items go in the same transaction
        loops = [(row[1], row[2]) for row in rows if row[4] == "loop" and row[1] in self.with_loop_items]
        async with self.services.db.engine.begin() as connection:
            await self._steps.insert(connection, rows)
            await store.delete_loop_items_at(connection, loops)
        return [None] * len(batches)

    def keep_loop_item(self, row: dict[str, Any]) -> None:
        """Store a completed loop item soon (``loop_progress``); ``row`` has ``FlowLoopItem``'s columns but the id."""
        self.with_loop_items.add(row["execution_id"])
        self.loop_items.add(row)

    async def _write_loop_items(self, rows: list[dict[str, Any]]) -> None:
        async with self.services.db.engine.begin() as connection:
            await store.insert_loop_items(connection, rows)
