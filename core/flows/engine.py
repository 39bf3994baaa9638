"""The flow engine: one code path for test runs, replays and live runs.

An execution is a row (``pending``) and a ``flows.execute`` job, created in one transaction by
whatever started it (a webhook event, a polled item, a schedule tick, a replay). The job marks the
execution ``running``, runs its steps in order and writes the outcome (``completed`` or ``failed``,
with the duration) together with every step's rendered input, output and error in one transaction;
the alerts of a live run are enqueued in that same transaction, so they are sent after the
execution ends and never block it.

Crash safety: steps with side effects (http, action, table.upsert, delay) are checkpointed as they
finish (the last step of a flow by the final write itself, which follows at once). When a process dies mid-execution its job's lease runs out and another worker claims the
job; the execution is still ``running``, its checkpointed steps are reused (not repeated) and the
rest run, so the execution ends completed or failed instead of staying stuck in ``running``. The
final write only succeeds while the execution is ``running``, so a duplicate delivery of the job
changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import Any

import attrs
from sqlalchemy import Integer, String, Text, bindparam, column, func, literal, select, values
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.appkeys import DB, FLOW_RUNNER, JOBS
from patchbay.core.flows.models import FlowExecution, FlowExecutionStep, FlowVersion
from patchbay.core.flows.steps import Deferred, RunContext, StepFailed, step_type
from patchbay.core.flows.templating import TemplateFailure, deadline, render_value
from patchbay.core.jobs.queue import JobContext
from patchbay.core.storage.base import UtcDateTime
from patchbay.core.timeutil import new_id, utcnow

log = logging.getLogger(__name__)

JOB_KIND = "flows.execute"
DEFAULT_STEP_TIMEOUT = 30.0
MAX_STEP_TIMEOUT = 300.0
_STEP_META_KEYS = ("id", "type", "name", "timeoutSeconds")
_VERSION_CACHE_SIZE = 2048
STEP_SESSIONS = 8


class InvalidSteps(ValueError):
    """The steps of a flow are malformed; the message names the step and the field."""


def validate_steps(app: Any, steps: Any) -> list[dict[str, Any]]:
    """Check a list of steps: objects with a unique string ``id`` and a known ``type``."""
    if not isinstance(steps, list):
        raise InvalidSteps("steps must be a list")
    seen: set[str] = set()
    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            raise InvalidSteps(f"steps[{index}] must be an object")
        step_id = step.get("id")
        if not isinstance(step_id, str) or not step_id:
            raise InvalidSteps(f"steps[{index}].id is required")
        if step_id in seen:
            raise InvalidSteps(f"steps[{index}].id {step_id!r} is used twice")
        seen.add(step_id)
        kind = step.get("type")
        if not isinstance(kind, str) or step_type(app, kind) is None:
            raise InvalidSteps(f"steps[{index}].type {kind!r} is not a known step type")
        timeout = step.get("timeoutSeconds")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_STEP_TIMEOUT):
            raise InvalidSteps(f"steps[{index}].timeoutSeconds must be a number in (0, {MAX_STEP_TIMEOUT:g}]")
    return steps


# ---------------------------------------------------------------------------------------------
# Running steps
# ---------------------------------------------------------------------------------------------


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

    def row(self, workspace_id: str, execution_id: str) -> dict[str, Any]:
        return {
            "id": new_id(), "workspace_id": workspace_id, "execution_id": execution_id, "position": self.position,
            "step_id": self.step_id, "type": self.type, "status": self.status, "input": self.input, "output": self.output,
            "error": self.error, "started_at": self.started_at, "finished_at": self.finished_at, "duration_ms": self.duration_ms,
        }  # fmt: skip


@attrs.define
class Outcome:
    status: str
    error: str | None
    records: list[StepRecord]


async def _render_and_run(kind: Any, context: RunContext, raw: dict[str, Any], record: StepRecord, timeout: float) -> Any:
    """Render the step's values in a worker thread (a heavy template must not block the event loop),
    then run it; the render's deadline is the end of the step's timeout."""
    prepare = getattr(kind, "prepare", None)
    with deadline(time.monotonic() + timeout):
        config = await asyncio.to_thread(render_value, prepare(raw) if prepare else raw, context.template_context())
        record.input = config
        return await kind.run(context, config)


async def run_steps(app: Any, context: RunContext, steps: list[dict[str, Any]], done: dict[int, StepRecord], checkpoint=None) -> Outcome:
    """Run ``steps`` in order, reusing the records in ``done`` (a resumed execution).

    ``checkpoint(records)`` is awaited after each step with side effects but the last (whose record
    the finish writes in the same batched transaction a checkpoint would). A failed step fails the
    execution; a filter that does not pass ends it as completed; later steps are recorded skipped.
    """
    records: list[StepRecord] = []
    status, error = "completed", None
    stopped = False
    for position, step in enumerate(steps):
        step_id, kind_name = str(step.get("id")), str(step.get("type"))
        if stopped:
            records.append(StepRecord(position, step_id, kind_name, "skipped"))
            continue
        previous = done.get(position)
        if previous is not None:
            records.append(previous)
            context.steps[step_id] = {"output": previous.output, "status": previous.status}
            if previous.status == "failed":
                status, error, stopped = "failed", previous.error, True
            elif kind_name == "filter" and isinstance(previous.output, dict) and not previous.output.get("passed", True):
                stopped = True
            continue
        record = StepRecord(position, step_id, kind_name, "completed", started_at=utcnow())
        context.step_id = step_id
        began = time.perf_counter()
        kind = step_type(app, kind_name)
        raw = {key: value for key, value in step.items() if key not in _STEP_META_KEYS}
        record.input = raw
        deferred: Deferred | None = None
        try:
            if kind is None:
                raise StepFailed(f"unknown step type {kind_name!r}")
            timeout = float(step.get("timeoutSeconds") or DEFAULT_STEP_TIMEOUT)
            try:
                record.output = await asyncio.wait_for(_render_and_run(kind, context, raw, record, timeout), timeout)
            except TimeoutError:
                raise StepFailed(f"step timed out after {timeout:g}s") from None
        except Deferred as wait:
            deferred, record.output = wait, wait.output
        except (StepFailed, TemplateFailure) as failure:
            record.status, record.error = "failed", str(failure)
        except asyncio.CancelledError:
            raise
        except Exception as failure:  # a step type's own bug or an I/O error: the step fails
            message = getattr(failure, "message", None)  # an ApiError of a service (a missing table ...)
            record.status, record.error = "failed", message if isinstance(message, str) else f"{type(failure).__name__}: {failure}"
        record.finished_at = utcnow()
        record.duration_ms = int((time.perf_counter() - began) * 1000)
        records.append(record)
        context.steps[step_id] = {"output": record.output, "status": record.status}
        if deferred is not None:
            if checkpoint is not None:
                await checkpoint(records)
            raise deferred
        if record.status == "failed":
            status, error, stopped = "failed", f"step {step_id!r} failed: {record.error}", True
        elif kind_name == "filter" and isinstance(record.output, dict) and not record.output.get("passed"):
            stopped = True
        elif checkpoint is not None and getattr(kind, "side_effects", True) and position < len(steps) - 1:
            await checkpoint(records)  # the last step needs none: the finish stores it as durably, in one batched write
    return Outcome(status, error, records)


# ---------------------------------------------------------------------------------------------
# Executions in the database
# ---------------------------------------------------------------------------------------------


def _insert(app: Any):
    return postgresql.insert if app[DB].is_postgres else sqlite.insert


def _step_rows(records: list[StepRecord], workspace_id: str, execution_id: str) -> list[dict[str, Any]]:
    return [record.row(workspace_id, execution_id) for record in records if not record.written]


async def _insert_steps(app: Any, session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        statement = _insert(app)(FlowExecutionStep.__table__).on_conflict_do_nothing(index_elements=["execution_id", "position"])
        await session.execute(statement, rows)


async def create_executions(app: Any, session: AsyncSession, rows: list[dict[str, Any]]) -> list[str]:
    """Insert executions (``pending``) and their jobs in ``session``'s transaction.

    Each row has ``workspace_id``, ``flow_id``, ``trigger_source``, ``trigger_payload`` and either
    ``version`` or ``steps``; an optional ``dedupe_key`` already used makes the row a no-op, which
    is how an event, item or tick starts a flow once. Answers the ids created."""
    if not rows:
        return []
    now = utcnow()
    values = [
        {"id": new_id(), "status": "pending", "attempts": 0, "created_at": now, "updated_at": now, "version": None, "steps": None,
         "dedupe_key": None, "subscription_id": None, "replay_of": None, "trigger_payload": None, **row}
        for row in rows
    ]  # fmt: skip
    statement = _insert(app)(FlowExecution).values(values).on_conflict_do_nothing(index_elements=["dedupe_key"]).returning(FlowExecution.id, FlowExecution.workspace_id)
    created = (await session.execute(statement)).all()
    by_workspace: dict[str, list[dict[str, Any]]] = {}
    for execution_id, workspace_id in created:
        by_workspace.setdefault(workspace_id, []).append({"executionId": execution_id})
    for workspace_id, payloads in by_workspace.items():
        await app[JOBS].enqueue_many(session, JOB_KIND, payloads, workspace_id=workspace_id)
    return [execution_id for execution_id, _ in created]


class Batcher:
    """Group commit: items submitted while a flush is running are flushed together by the next
    ``flush(items) -> results`` call, so concurrent executions share one transaction."""

    def __init__(self, flush, *, max_batch: int = 256) -> None:
        self._flush = flush
        self._max = max_batch
        self._pending: list[tuple[Any, asyncio.Future]] = []
        self._task: asyncio.Task | None = None

    async def submit(self, item: Any) -> Any:
        future = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._pending:
            await asyncio.sleep(0)  # let callers resumed in this loop iteration join the batch
            batch, self._pending = self._pending[: self._max], self._pending[self._max :]
            await self._flush_batch(batch)

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


_STARTED = ("id", "workspace_id", "flow_id", "version", "steps", "trigger_payload", "trigger_source", "attempts", "started_at")


@attrs.define
class _Finish:
    execution: dict[str, Any]
    outcome: Outcome
    alerts: bool


class FlowRunner:
    """Runs executions for one app: batched starts and finishes, and a cache of version snapshots
    (immutable, so safe to keep)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.versions: OrderedDict[tuple[str, int], list] = OrderedDict()
        self._starts = Batcher(self._start_many)
        self._finishes = Batcher(self._finish_many)
        self._lookups = Batcher(self._lookup_many)
        self._checkpoints = Batcher(self._checkpoint_many)
        #: sessions opened by steps at once; more would overflow the connection pool, and on
        #: PostgreSQL every overflow connection is a new server process, opened and closed again
        self.step_sessions = asyncio.Semaphore(STEP_SESSIONS)

    # -- starting --------------------------------------------------------------------------------

    async def start(self, execution_id: str) -> dict[str, Any] | None:
        """Mark the execution running (again, when resumed); None when it has already ended."""
        return await self._starts.submit(execution_id)

    async def _start_many(self, ids: list[str]) -> list[dict[str, Any] | None]:
        table = FlowExecution.__table__
        now = utcnow()
        statement = (
            table.update()
            .where(table.c.id.in_(ids), table.c.status.in_(("pending", "running")))
            .values(status="running", attempts=table.c.attempts + 1, updated_at=now,
                    started_at=func.coalesce(table.c.started_at, literal(now, UtcDateTime())))  # fmt: skip
            .returning(*[table.c[name] for name in _STARTED])
        )
        async with self.app[DB].transaction() as session:
            started = {row["id"]: dict(row) for row in (await session.execute(statement)).mappings()}
        return [started.get(execution_id) for execution_id in ids]

    # -- finishing -------------------------------------------------------------------------------

    async def finish(self, execution: dict[str, Any], outcome: Outcome, *, alerts: bool) -> bool:
        """Record the outcome; False when another run had already finished the execution."""
        return await self._finishes.submit(_Finish(execution, outcome, alerts))

    async def _finish_many(self, items: list[_Finish]) -> list[bool]:
        from patchbay.core.alerts.service import enqueue_alerts

        now = utcnow()
        updates = []
        for item in items:
            started = item.execution["started_at"] or now
            updates.append({"id": item.execution["id"], "status": item.outcome.status, "error": item.outcome.error, "finished_at": now,
                            "duration_ms": int((now - started).total_seconds() * 1000)})  # fmt: skip
        async with self.app[DB].transaction() as session:
            finished = await self._mark_finished(session, updates)
            rows: list[dict[str, Any]] = []
            for item in items:
                if item.execution["id"] in finished:
                    rows += _step_rows(item.outcome.records, item.execution["workspace_id"], item.execution["id"])
            await _insert_steps(self.app, session, rows)
            alerting = [
                {"workspace_id": i.execution["workspace_id"], "flow_id": i.execution["flow_id"], "execution_id": i.execution["id"],
                 "status": i.outcome.status, "error": i.outcome.error}
                for i in items if i.alerts and i.execution["id"] in finished
            ]  # fmt: skip
            await enqueue_alerts(self.app, session, alerting)
        return [item.execution["id"] in finished for item in items]

    async def _mark_finished(self, session: AsyncSession, updates: list[dict[str, Any]]) -> set[str]:
        """Set the outcome of each execution still ``running``; answers the ids changed."""
        table = FlowExecution.__table__
        if self.app[DB].is_postgres:
            given = values(
                column("id", String), column("status", String), column("error", Text), column("finished_at", UtcDateTime()), column("duration_ms", Integer),
                name="outcome",
            ).data([(u["id"], u["status"], u["error"], u["finished_at"], u["duration_ms"]) for u in updates])  # fmt: skip
            statement = (
                table.update()
                .where(table.c.id == given.c.id, table.c.status == "running")
                .values(status=given.c.status, error=given.c.error, finished_at=given.c.finished_at, updated_at=given.c.finished_at,
                        duration_ms=given.c.duration_ms)  # fmt: skip
                .returning(table.c.id)
            )
            return set((await session.scalars(statement)).all())
        # SQLite (one writer, no UPDATE ... FROM VALUES): one executemany, checked by its row count
        statement = (
            table.update()
            .where(table.c.id == bindparam("eid"), table.c.status == "running")
            .values(status=bindparam("new_status"), error=bindparam("new_error"), finished_at=bindparam("finished"),
                    updated_at=bindparam("finished"), duration_ms=bindparam("duration"))  # fmt: skip
        )
        params = [{"eid": u["id"], "new_status": u["status"], "new_error": u["error"], "finished": u["finished_at"], "duration": u["duration_ms"]} for u in updates]
        if len(params) == 1 or (await session.execute(statement, params)).rowcount != len(params):
            finished = set()
            for param in params:  # some had ended already (a duplicate run): find out which, one by one
                if (await session.execute(statement, param)).rowcount == 1:
                    finished.add(param["eid"])
            return finished
        return {u["id"] for u in updates}

    # -- steps' database work, shared by concurrent executions -----------------------------------

    async def lookup(self, workspace_id: str, table_slug: str, column: str, value: Any) -> dict[str, Any] | None:
        """The ``table.lookup`` of one execution, answered with those of the executions running
        alongside: one session and three queries per workspace in the batch."""
        result = await self._lookups.submit((workspace_id, table_slug, column, value))
        if isinstance(result, Exception):
            raise result
        return result

    async def _lookup_many(self, items: list[tuple[str, str, str, Any]]) -> list[Any]:
        from patchbay.core.tables.service import lookup_rows

        by_workspace: dict[str, list[int]] = {}
        for index, item in enumerate(items):
            by_workspace.setdefault(item[0], []).append(index)
        results: list[Any] = [None] * len(items)
        for workspace_id, indexes in by_workspace.items():
            async with self.step_sessions, self.app[DB].session(tenant=workspace_id) as session:
                found = await lookup_rows(session, workspace_id=workspace_id, lookups=[items[i][1:] for i in indexes])
            for index, result in zip(indexes, found, strict=True):
                results[index] = result
        return results

    async def checkpoint(self, rows: list[dict[str, Any]]) -> None:
        """Store finished steps' records; concurrent executions' checkpoints share a transaction."""
        await self._checkpoints.submit(rows)

    async def _checkpoint_many(self, batches: list[list[dict[str, Any]]]) -> list[None]:
        async with self.app[DB].transaction() as session:
            await _insert_steps(self.app, session, [row for rows in batches for row in rows])
        return [None] * len(batches)

    # -- version snapshots -----------------------------------------------------------------------

    async def version_steps(self, flow_id: str, version: int) -> list[dict[str, Any]]:
        key = (flow_id, version)
        steps = self.versions.get(key)
        if steps is None:
            async with self.app[DB].session() as session:
                steps = await session.scalar(select(FlowVersion.steps).where(FlowVersion.flow_id == flow_id, FlowVersion.version == version))
            if steps is None:
                raise StepFailed(f"version {version} of flow {flow_id} does not exist")
            self.versions[key] = steps
            if len(self.versions) > _VERSION_CACHE_SIZE:
                self.versions.popitem(last=False)
        return steps


async def _done_records(app: Any, execution_id: str) -> dict[int, StepRecord]:
    async with app[DB].session() as session:
        rows = (await session.scalars(select(FlowExecutionStep).where(FlowExecutionStep.execution_id == execution_id))).all()
    return {
        row.position: StepRecord(row.position, row.step_id, row.type, row.status, row.input, row.output, row.error,
                                 row.started_at, row.finished_at, row.duration_ms, written=True)
        for row in rows if row.status in ("completed", "failed")
    }  # fmt: skip


async def run_execution(app: Any, execution_id: str) -> str | None:
    """Run (or resume) one execution to its end; answers its final status, or None when it had
    already ended or waits on a long delay."""
    runner: FlowRunner = app[FLOW_RUNNER]
    execution = await runner.start(execution_id)
    if execution is None:
        return None
    workspace_id = execution["workspace_id"]
    done = await _done_records(app, execution_id) if execution["attempts"] > 1 else {}
    context = RunContext(app, workspace_id, execution["flow_id"], execution_id, execution["trigger_payload"], test=execution["trigger_source"] == "test")
    try:
        steps = execution["steps"] if execution["version"] is None else await runner.version_steps(execution["flow_id"], execution["version"])
    except StepFailed as error:
        await runner.finish(execution, Outcome("failed", str(error), []), alerts=not context.test)
        return "failed"

    async def checkpoint(records: list[StepRecord]) -> None:
        await runner.checkpoint(_step_rows(records, workspace_id, execution_id))
        for record in records:
            record.written = True

    try:
        outcome = await run_steps(app, context, steps or [], done, checkpoint)
    except Deferred as wait:
        async with app[DB].transaction() as session:
            app[JOBS].enqueue(session, JOB_KIND, {"executionId": execution_id}, delay=wait.seconds, workspace_id=workspace_id)
        return None
    try:
        await runner.finish(execution, outcome, alerts=not context.test)
    except Exception as error:  # e.g. a plugin step's output that is not JSON: fail the run, keep the reason
        log.warning("storing the outcome of execution %s failed: %r", execution_id, error)
        outcome = Outcome("failed", f"storing the outcome failed: {type(error).__name__}: {error}", [])
        await runner.finish(execution, outcome, alerts=not context.test)
    return outcome.status


async def execute_job(context: JobContext) -> None:
    await run_execution(context.app, context.payload["executionId"])


async def run_test(app: Any, *, workspace_id: str, flow_id: str, steps: list[dict[str, Any]], payload: Any) -> str:
    """``POST /flows/{id}/test``: record an execution of ``steps`` (source ``test``) and run it now,
    without alerts. Answers the execution id."""
    now = utcnow()
    execution_id = new_id()
    async with app[DB].transaction(tenant=workspace_id) as session:
        session.add(FlowExecution(id=execution_id, flow_id=flow_id, status="running", trigger_source="test", trigger_payload=payload,
                                  steps=steps, attempts=1, started_at=now))  # fmt: skip
    execution = {"id": execution_id, "workspace_id": workspace_id, "flow_id": flow_id, "started_at": now}
    context = RunContext(app, workspace_id, flow_id, execution_id, payload, test=True)
    outcome = await run_steps(app, context, steps, {})
    await app[FLOW_RUNNER].finish(execution, outcome, alerts=False)
    return execution_id
