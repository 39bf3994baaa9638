"""The flow engine: one code path for test runs, replays and live runs.

An execution is a row (``pending``) and belongs to a ``flows.execute`` job, created in one
transaction by whatever started it (a webhook event batch, a poll, a schedule tick, a replay); one
job carries up to ``EXECUTIONS_PER_JOB`` executions of a workspace and runs them at once. Each
execution is marked ``running``, runs its steps in order (their plan cached per version, see
``plan``) and has its outcome (``completed`` or ``failed``, with the duration) written together
with every step's rendered input, output and error and the alerts of a live run; the executions
running in the process share these writes (group commit, see ``runner``), so alerts are sent after
the execution ends and never block it.

Crash safety: steps with side effects (http, action, table.upsert, delay) are checkpointed as they
finish (the last step of a flow by the final write itself, which follows at once). When a process
dies mid-execution its job's lease runs out and another worker claims the job; an execution still
``running`` reuses its checkpointed steps and runs the rest, so it ends completed or failed instead
of staying stuck in ``running``; one that had ended is not started again, so a duplicate delivery
of the job changes nothing. A loop whose steps have side effects also stores its items as they
complete (``loop_progress``): resumed, it runs only the items that had not.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs
from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.errors import Invalid, NotFound
from patchbay.core.flows import store
from patchbay.core.flows.concurrency import admit
from patchbay.core.flows.loop_progress import earlier_loops, resumed_loops
from patchbay.core.flows.loop_retry import failed_loops
from patchbay.core.flows.models import Flow, FlowExecution, FlowExecutionStep
from patchbay.core.flows.plan import MAX_STEP_TIMEOUT, StepPlan, plan_steps
from patchbay.core.flows.runner import FlowRunner, Outcome, StepRecord, step_rows
from patchbay.core.flows.step_schemas import MAX_GOTO_LIMIT
from patchbay.core.flows.steps import INLINE_DELAY_SECONDS, Deferred, RunContext, StepFailed, step_type
from patchbay.core.flows.templating import HEAVY, TemplateFailure
from patchbay.core.flows.workspace_settings import flow_settings
from patchbay.core.jobs.queue import JobContext
from patchbay.core.timeutil import new_id, utcnow

if TYPE_CHECKING:
    from patchbay.core.plugins.registry import Registry
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

JOB_KIND = "flows.execute"
#: executions one ``flows.execute`` job runs (at once, sharing their database work)
EXECUTIONS_PER_JOB = 50
#: lists of steps inside steps (branch paths, loop bodies) at most
MAX_NESTING = 10


def validate_steps(registry: Registry, steps: Any) -> list[dict[str, Any]]:
    """Check that ``steps`` is a flow's tree of steps: objects with a string ``id`` unique in the
    whole flow and a known ``type``. ``Invalid`` names the step and the field. What is wrong
    within a step (its configuration, its references) is a problem the flow is saved with
    (``checks``), refused only at publish."""
    if not isinstance(steps, list):
        raise Invalid("steps must be a list")
    seen: set[str] = set()

    def walk(items: list[Any], where: str, depth: int = 1) -> None:
        if depth > MAX_NESTING:
            raise Invalid(f"{where}: steps nest at most {MAX_NESTING} deep")
        for index, step in enumerate(items):
            at = f"{where}[{index}]"
            if not isinstance(step, dict):
                raise Invalid(f"{at} must be an object")
            step_id = step.get("id")
            if not isinstance(step_id, str) or not step_id:
                raise Invalid(f"{at}.id is required")
            if step_id in seen:
                raise Invalid(f"{at}.id {step_id!r} is used twice")
            seen.add(step_id)
            name = step.get("type")
            kind = step_type(registry, name) if isinstance(name, str) else None
            if kind is None:
                raise Invalid(f"{at}.type {name!r} is not a known step type")
            timeout = step.get("timeoutSeconds")
            if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_STEP_TIMEOUT):
                raise Invalid(f"{at}.timeoutSeconds must be a number in (0, {MAX_STEP_TIMEOUT:g}]")
            split = getattr(kind, "split", None)
            for label, children in split(step)[1] if split else ():
                walk(children, f"{at}.{label}", depth + 1)

    walk(steps, "steps")
    return steps


# ---------------------------------------------------------------------------------------------
# Running steps
# ---------------------------------------------------------------------------------------------


async def _render(runner: FlowRunner, context: RunContext, plan: StepPlan) -> Any:
    """The step's values rendered (in a worker thread when they hold templates, so a heavy template
    does not block the event loop; the render's deadline is the end of the step's timeout)."""
    if plan.config.templated:
        async with asyncio.timeout(plan.timeout):
            return await runner.render(plan.config, context.template_context(), plan.timeout, context.workspace_id)
    return plan.config.render({})


async def _run_step(runner: FlowRunner, context: RunContext, plan: StepPlan, record: StepRecord) -> Any:
    """Render the step's values, then run it within its timeout."""
    if plan.kind is None:
        raise StepFailed(f"unknown step type {plan.type!r}")
    if plan.config.light is not None and getattr(plan.kind, "never_waits", False):
        config = plan.config.light(context.template_context())
        if config is not HEAVY:  # rendered and run without a pause for a timer to cut: no timeout to arm
            record.input = config
            return await plan.kind.run(context, config)
    async with asyncio.timeout(plan.timeout):
        if plan.config.templated:
            config = await runner.render(plan.config, context.template_context(), plan.timeout, context.workspace_id)
        else:
            config = plan.config.render({})
        record.input = config
        return await plan.kind.run(context, config)


@attrs.define
class Frame:
    """Where a list of steps runs: the execution itself (and the paths of its branches), or one
    item of a loop. ``halted``: a filter stopped it, or a step failed (``error``)."""

    records: dict[int, StepRecord]
    item: bool = False
    halted: bool = False
    error: str | None = None


class Walk:
    """One execution's run through its tree of steps (see ``steps_control`` for the control
    steps' side). A failed step fails its frame unless its ``onError`` says ``continue`` (the
    failure is recorded, the next step runs) or ``goto:<id>`` (a step of the same list runs next; the
    steps jumped over are recorded skipped; at most ``gotoLimit`` times, ``MAX_GOTO_LIMIT`` without
    one)."""

    def __init__(self, services: Services, done: dict[int, StepRecord], checkpoint, last_position: int) -> None:
        self.runner: FlowRunner = services.flow_runner
        self.done = done
        self.checkpoint = checkpoint
        self.last_position = last_position
        self.main = Frame({})

    def item_frame(self) -> Frame:
        return Frame({}, item=True)

    def keep_item(self, context: RunContext, plan: StepPlan, index: int, item: Any, result: dict[str, Any]) -> None:
        """Store the completed item ``index`` of the loop ``plan`` (run in ``context``, not an item's)
        for a resume (``loop_progress``): in an execution that is checkpointed, when the loop's steps
        have side effects."""
        if self.checkpoint is None or not plan.side_effects or context.loop is not None:
            return
        self.runner.keep_loop_item(
            {
                "workspace_id": context.workspace_id,
                "execution_id": context.execution_id,
                "position": plan.position,
                "step_id": plan.id,
                "item_index": index,
                "item": item,
                "result": result,
            }
        )

    async def items_stored(self) -> None:
        """Wait until the items kept so far are stored (a loop ends: they precede its record)."""
        if self.checkpoint is not None:
            await self.runner.loop_items.settle()

    async def block(self, plans: tuple[StepPlan, ...] | list[StepPlan], context: RunContext, frame: Frame) -> None:
        """Run ``plans`` in order in ``frame``; what follows a halt is recorded skipped."""
        index, taken = 0, {}
        while index < len(plans):
            plan = plans[index]
            if frame.halted:
                self.skip(plans[index:], frame)
                return
            record, nested = await self._step(plan, context, frame)
            if record.status == "failed":
                error = record.error if nested else f"step {plan.id!r} failed: {record.error}"
                if plan.on_error == "continue":
                    index += 1
                    continue
                if plan.on_error == "goto" and plan.goto_index is not None:
                    taken[plan.id] = taken.get(plan.id, 0) + 1
                    if taken[plan.id] <= (plan.goto_limit or MAX_GOTO_LIMIT):
                        self.skip(plans[index + 1 : plan.goto_index], frame)
                        index = plan.goto_index
                        continue
                    error = f"{error} (after {taken[plan.id] - 1} jumps to {plans[plan.goto_index].id!r})"
                frame.halted, frame.error = True, error
            elif plan.type == "filter" and isinstance(record.output, dict) and not record.output.get("passed", True):
                frame.halted = True
            index += 1

    def skip(self, plans, frame: Frame) -> None:
        """Record ``plans`` and everything nested in them ``skipped``."""
        for plan in plans:
            frame.records[plan.position] = StepRecord(plan.position, plan.id, plan.type, "skipped")
            for _, block in plan.blocks:
                self.skip(block, frame)

    def last_output(self, plans, context: RunContext) -> Any:
        """The output of the last step of ``plans`` that ran (in ``context``)."""
        for plan in reversed(plans):
            ran = context.steps.get(plan.id)
            if ran is not None:
                return ran["output"]
        return None

    def summarize(self, plans, frames: list[Frame], frame: Frame) -> None:
        """Record each of ``plans`` (a loop's steps) once for all the items that ran it: failed
        when an item failed it, completed when one completed it, else skipped; the output counts."""
        for plan in plans:
            statuses = [f.records[plan.position].status for f in frames if plan.position in f.records]
            counts = {status: statuses.count(status) for status in ("completed", "failed", "skipped")}
            status = "failed" if counts["failed"] else "completed" if counts["completed"] else "skipped"
            frame.records[plan.position] = StepRecord(plan.position, plan.id, plan.type, status, input=plan.raw, output=counts)
            for _, block in plan.blocks:
                self.summarize(block, frames, frame)

    async def _step(self, plan: StepPlan, context: RunContext, frame: Frame) -> tuple[StepRecord, bool]:
        """Run (or reuse, when resumed) one step; answers its record and whether its failure is
        one of a step nested in it."""
        # a control step's record is stored only after its steps ended: reused, it stands for them
        previous = None if frame.item else self.done.get(plan.position)
        if previous is not None:
            frame.records[plan.position] = previous
            context.steps[plan.id] = {"output": previous.output, "status": previous.status}
            return previous, False
        record = StepRecord(plan.position, plan.id, plan.type, "completed", input=plan.raw, started_at=utcnow())
        context.step_id = plan.id
        began = time.perf_counter()
        deferred: Deferred | None = None
        nested = False
        try:
            if plan.control:
                record.input = config = await _render(self.runner, context, plan)
                record.output = await plan.kind.run_control(self, context, plan, config, frame)
                if frame.error is not None:  # a step inside failed: this step fails, its onError decides
                    record.status, record.error, nested = "failed", frame.error, True
                    frame.halted, frame.error = False, None
            else:
                record.output = await _run_step(self.runner, context, plan, record)
        except Deferred as wait:
            if plan.control:  # a step inside waits: this one ends when the execution resumes
                raise
            if frame.item:
                record.status, record.error = "failed", f"a delay longer than {INLINE_DELAY_SECONDS:g}s cannot run inside a loop"
            else:
                deferred, record.output = wait, wait.output
        except TimeoutError:
            record.status, record.error = "failed", f"step timed out after {plan.timeout:g}s"
        except (StepFailed, TemplateFailure) as failure:
            record.status, record.error = "failed", str(failure)
            record.output = getattr(failure, "output", None)
        except asyncio.CancelledError:
            raise
        except Exception as failure:  # a step type's own bug or an I/O error: the step fails
            message = getattr(failure, "message", None)  # a domain error of a service (a missing table ...)
            record.status, record.error = "failed", message if isinstance(message, str) else f"{type(failure).__name__}: {failure}"
        record.finished_at = utcnow()
        record.duration_ms = int((time.perf_counter() - began) * 1000)
        frame.records[plan.position] = record
        context.steps[plan.id] = {"output": record.output, "status": record.status}
        if deferred is not None:
            if self.checkpoint is not None:
                await self.checkpoint(list(self.main.records.values()))
            raise deferred
        if (
            (record.status != "failed" or plan.on_error != "fail")
            and not frame.item
            and self.checkpoint is not None
            and plan.side_effects
            and plan.last < self.last_position
        ):
            await self.checkpoint(list(self.main.records.values()))  # the last step needs none: the finish stores it as durably, in one batched write
        return record, nested


async def run_steps(services: Services, context: RunContext, plans: list[StepPlan], done: dict[int, StepRecord], checkpoint=None) -> Outcome:
    """Run the planned steps, reusing the records in ``done`` (a resumed execution).

    ``checkpoint(records)`` is awaited after each step with side effects but the last (whose record
    the finish writes in the same batched transaction a checkpoint would). A failed step fails the
    execution (unless its ``onError`` handles it); a filter that does not pass ends it as completed;
    the steps not run are recorded skipped.
    """
    walk = Walk(services, done, checkpoint, max((plan.last for plan in plans), default=-1))
    await walk.block(plans, context, walk.main)
    records = sorted(walk.main.records.values(), key=lambda record: record.position)
    return Outcome("failed" if walk.main.error else "completed", walk.main.error, records)


# ---------------------------------------------------------------------------------------------
# Executions in the database
# ---------------------------------------------------------------------------------------------


def _insert(services: Services):
    return postgresql.insert if services.db.is_postgres else sqlite.insert


async def create_executions(services: Services, session: AsyncSession, rows: list[dict[str, Any]]) -> list[str]:
    """Insert executions (``pending``) and their jobs in ``session``'s transaction: one job per
    ``EXECUTIONS_PER_JOB`` executions of a workspace.

    Each row has ``workspace_id``, ``flow_id``, ``trigger_source``, ``trigger_payload`` and either
    ``version`` or ``steps``; an optional ``dedupe_key`` already used makes the row a no-op, which
    is how an event, item or tick starts a flow once. Answers the ids created."""
    if not rows:
        return []
    now = utcnow()
    values = [
        {
            "id": new_id(),
            "status": "pending",
            "attempts": 0,
            "created_at": now,
            "updated_at": now,
            "version": None,
            "steps": None,
            "dedupe_key": None,
            "subscription_id": None,
            "replay_of": None,
            "trigger_payload": None,
            **row,
        }
        for row in rows
    ]
    statement = (
        _insert(services)(FlowExecution)
        .values(values)
        .on_conflict_do_nothing(index_elements=["dedupe_key"])
        .returning(FlowExecution.id, FlowExecution.workspace_id)
    )
    created = (await session.execute(statement)).all()
    await enqueue_runs(services, session, created)
    return [execution_id for execution_id, _ in created]


async def enqueue_runs(services: Services, session: AsyncSession, executions: list[tuple[str, str]], *, delay: float = 0) -> None:
    """The ``flows.execute`` jobs of ``(execution id, workspace id)`` pairs, due in ``delay``
    seconds, in ``session``'s transaction: one job per ``EXECUTIONS_PER_JOB`` executions of a
    workspace."""
    by_workspace: dict[str, list[str]] = {}
    for execution_id, workspace_id in executions:
        by_workspace.setdefault(workspace_id, []).append(execution_id)
    for workspace_id, ids in by_workspace.items():
        payloads = [{"executionIds": ids[start : start + EXECUTIONS_PER_JOB]} for start in range(0, len(ids), EXECUTIONS_PER_JOB)]
        await services.jobs.enqueue_many(session, JOB_KIND, payloads, workspace_id=workspace_id, delay=delay)


async def _done_records(services: Services, execution_id: str) -> dict[int, StepRecord]:
    async with services.db.session() as session:
        rows = (await session.scalars(select(FlowExecutionStep).where(FlowExecutionStep.execution_id == execution_id))).all()
    return {
        row.position: StepRecord(
            row.position, row.step_id, row.type, row.status, row.input, row.output, row.error, row.started_at, row.finished_at, row.duration_ms, written=True
        )
        for row in rows
        if row.status in ("completed", "failed")
    }


async def run_execution(services: Services, execution_id: str) -> str | None:
    """Run (or resume) one execution to its end; answers its final status, or None when it had
    already ended or now waits (a long delay, a ``wait`` step: stored ``waiting`` with the job that
    resumes it). Executions run at once share their database work."""
    runner: FlowRunner = services.flow_runner
    execution = await runner.start(execution_id)
    if execution is None:
        return None
    try:
        return await _run_started(services, execution)
    finally:
        runner.release(execution_id)


async def _run_started(services: Services, execution: dict[str, Any]) -> str | None:
    runner: FlowRunner = services.flow_runner
    execution_id = execution["id"]
    workspace_id = execution["workspace_id"]
    done = await _done_records(services, execution_id) if execution["attempts"] > 1 or execution["trigger_source"] == "retry" else {}
    context = RunContext(services, workspace_id, execution["flow_id"], execution_id, execution["trigger_payload"], test=execution["trigger_source"] == "test")
    try:
        plans = (
            plan_steps(services.registry, execution["steps"]) if execution["version"] is None else await runner.plan(execution["flow_id"], execution["version"])
        )
    except StepFailed as error:
        await runner.finish(execution, Outcome("failed", str(error), []), alerts=not context.test)
        return "failed"
    resumed, stored = await resumed_loops(services, execution_id, plans, done) if execution["attempts"] > 1 else ({}, False)
    if stored:
        runner.with_loop_items.add(execution_id)
    context.earlier_loops = earlier_loops(await failed_loops(services, execution, plans, done), resumed)

    async def checkpoint(records: list[StepRecord]) -> None:
        await runner.checkpoint(step_rows(records, workspace_id, execution_id))
        for record in records:
            record.written = True

    try:
        outcome = await run_steps(services, context, plans, done, checkpoint)
    except Deferred as wait:
        now = utcnow()
        async with services.db.transaction() as session:
            if await store.park(await session.connection(), execution_id, now + timedelta(seconds=wait.seconds), now):
                services.jobs.enqueue(session, JOB_KIND, {"executionIds": [execution_id]}, delay=wait.seconds, workspace_id=workspace_id)
        return None
    try:
        await runner.finish(execution, outcome, alerts=not context.test)
    except Exception as error:  # e.g. a plugin step's output that is not JSON: fail the run, keep the reason
        log.warning("storing the outcome of execution %s failed: %r", execution_id, error)
        outcome = Outcome("failed", f"storing the outcome failed: {type(error).__name__}: {error}", [])
        await runner.finish(execution, outcome, alerts=not context.test)
    return outcome.status


async def execute_job(context: JobContext) -> None:
    """Run the job's executions at once (those its workspace's limit admits, see ``concurrency``). One that raises (the database went away ...) does not stop
    the others; the job then fails and its retry resumes only the executions that have not ended."""
    ids = context.payload.get("executionIds") or [context.payload["executionId"]]  # a job queued before batches
    if context.workspace_id is not None:
        limit = (await flow_settings(context.services, context.workspace_id)).max_concurrent
        if limit is not None:
            ids = await admit(context.services, context.workspace_id, ids, limit)
    results = await asyncio.gather(*(run_execution(context.services, execution_id) for execution_id in ids), return_exceptions=True)
    errors = [result for result in results if isinstance(result, BaseException)]
    for error in errors:
        if not isinstance(error, Exception):
            raise error  # cancelled: the worker is stopping
    if errors:
        raise errors[0]


async def run_inline(
    services: Services,
    *,
    workspace_id: str,
    flow_id: str,
    plans: list[StepPlan],
    payload: Any,
    source: str,
    version: int | None = None,
    steps: list[dict[str, Any]] | None = None,
    depth: int = 0,
    test: bool = False,
) -> tuple[str, Outcome, dict[str, Any]]:
    """Record an execution (``running``, of ``version`` or of ``steps``) and run it now, in this
    task: test runs, ``POST /flows/{id}/invoke`` and ``call_flow``. Answers the execution id, its
    outcome and its reply (``response``: what its first ``respond`` step answered). A step that
    would park the execution (a long delay) fails it: nothing resumes an inline run. Alerts are sent
    unless ``test``."""
    now = utcnow()
    execution_id = new_id()
    async with services.db.transaction(tenant=workspace_id) as session:
        session.add(
            FlowExecution(
                id=execution_id,
                flow_id=flow_id,
                status="running",
                trigger_source=source,
                trigger_payload=payload,
                version=version,
                steps=steps,
                attempts=1,
                started_at=now,
                lease_until=services.flow_runner.lease_until(now),
            )
        )
    execution = {"id": execution_id, "workspace_id": workspace_id, "flow_id": flow_id, "started_at": now, "trigger_source": source}
    context = RunContext(services, workspace_id, flow_id, execution_id, payload, test=test, depth=depth)
    services.flow_runner.hold(execution_id)
    try:
        try:
            outcome = await run_steps(services, context, plans, {})
        except Deferred:
            outcome = Outcome("failed", f"a flow run synchronously cannot wait longer than {INLINE_DELAY_SECONDS:g}s", [])
        await services.flow_runner.finish(execution, outcome, alerts=not test)
    finally:
        services.flow_runner.release(execution_id)
    return execution_id, outcome, context.reply


async def run_published(
    services: Services, *, workspace_id: str, flow_id: str, payload: Any, source: str, depth: int = 0, test: bool = False
) -> tuple[str, Outcome, dict[str, Any]]:
    """Run the published version of a live flow of the workspace now (see :func:`run_inline`);
    ``NotFound`` without the flow, ``Invalid`` when it is not live."""
    async with services.db.session(tenant=workspace_id) as session:
        flow = await session.scalar(select(Flow).where(Flow.id == flow_id))
    if flow is None:
        raise NotFound(f"Flow not found: {flow_id}")
    if flow.published_version is None or flow.status == "archived" or not flow.is_active:
        raise Invalid(f"flow {flow_id} does not run: publish it and keep it active")
    plans = await services.flow_runner.plan(flow.id, flow.published_version)
    return await run_inline(
        services,
        workspace_id=workspace_id,
        flow_id=flow.id,
        plans=plans,
        payload=payload,
        source=source,
        version=flow.published_version,
        depth=depth,
        test=test,
    )


async def run_test(services: Services, *, workspace_id: str, flow_id: str, steps: list[dict[str, Any]], payload: Any) -> str:
    """``POST /flows/{id}/test``: record an execution of ``steps`` (source ``test``) and run it now,
    without alerts. Answers the execution id."""
    execution_id, _, _ = await run_inline(
        services,
        workspace_id=workspace_id,
        flow_id=flow_id,
        plans=plan_steps(services.registry, steps),
        payload=payload,
        source="test",
        steps=steps,
        test=True,
    )
    return execution_id
