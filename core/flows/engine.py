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
of the job changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.errors import Invalid
from patchbay.core.flows.models import FlowExecution, FlowExecutionStep
from patchbay.core.flows.plan import MAX_STEP_TIMEOUT, StepPlan, plan_steps
from patchbay.core.flows.runner import FlowRunner, Outcome, StepRecord, step_rows
from patchbay.core.flows.steps import Deferred, RunContext, StepFailed, step_type
from patchbay.core.flows.templating import HEAVY, TemplateFailure
from patchbay.core.jobs.queue import JobContext
from patchbay.core.timeutil import new_id, utcnow

if TYPE_CHECKING:
    from patchbay.core.plugins.registry import Registry
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

JOB_KIND = "flows.execute"
#: executions one ``flows.execute`` job runs (at once, sharing their database work)
EXECUTIONS_PER_JOB = 50


def validate_steps(registry: Registry, steps: Any) -> list[dict[str, Any]]:
    """Check a list of steps: objects with a unique string ``id`` and a known ``type``; ``Invalid``
    names the step and the field."""
    if not isinstance(steps, list):
        raise Invalid("steps must be a list")
    seen: set[str] = set()
    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            raise Invalid(f"steps[{index}] must be an object")
        step_id = step.get("id")
        if not isinstance(step_id, str) or not step_id:
            raise Invalid(f"steps[{index}].id is required")
        if step_id in seen:
            raise Invalid(f"steps[{index}].id {step_id!r} is used twice")
        seen.add(step_id)
        kind = step.get("type")
        if not isinstance(kind, str) or step_type(registry, kind) is None:
            raise Invalid(f"steps[{index}].type {kind!r} is not a known step type")
        timeout = step.get("timeoutSeconds")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_STEP_TIMEOUT):
            raise Invalid(f"steps[{index}].timeoutSeconds must be a number in (0, {MAX_STEP_TIMEOUT:g}]")
    return steps


# ---------------------------------------------------------------------------------------------
# Running steps
# ---------------------------------------------------------------------------------------------


async def _run_step(runner: FlowRunner, context: RunContext, plan: StepPlan, record: StepRecord) -> Any:
    """Render the step's values (in a worker thread when they hold templates, so a heavy template
    does not block the event loop; the render's deadline is the end of the step's timeout), then
    run it."""
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


async def run_steps(services: Services, context: RunContext, plans: list[StepPlan], done: dict[int, StepRecord], checkpoint=None) -> Outcome:
    """Run the planned steps in order, reusing the records in ``done`` (a resumed execution).

    ``checkpoint(records)`` is awaited after each step with side effects but the last (whose record
    the finish writes in the same batched transaction a checkpoint would). A failed step fails the
    execution; a filter that does not pass ends it as completed; later steps are recorded skipped.
    """
    runner = services.flow_runner
    records: list[StepRecord] = []
    status, error = "completed", None
    stopped = False
    for plan in plans:
        if stopped:
            records.append(StepRecord(plan.position, plan.id, plan.type, "skipped"))
            continue
        previous = done.get(plan.position)
        if previous is not None:
            records.append(previous)
            context.steps[plan.id] = {"output": previous.output, "status": previous.status}
            if previous.status == "failed":
                status, error, stopped = "failed", previous.error, True
            elif plan.type == "filter" and isinstance(previous.output, dict) and not previous.output.get("passed", True):
                stopped = True
            continue
        record = StepRecord(plan.position, plan.id, plan.type, "completed", input=plan.raw, started_at=utcnow())
        context.step_id = plan.id
        began = time.perf_counter()
        deferred: Deferred | None = None
        try:
            record.output = await _run_step(runner, context, plan, record)
        except Deferred as wait:
            deferred, record.output = wait, wait.output
        except TimeoutError:
            record.status, record.error = "failed", f"step timed out after {plan.timeout:g}s"
        except (StepFailed, TemplateFailure) as failure:
            record.status, record.error = "failed", str(failure)
        except asyncio.CancelledError:
            raise
        except Exception as failure:  # a step type's own bug or an I/O error: the step fails
            message = getattr(failure, "message", None)  # a domain error of a service (a missing table ...)
            record.status, record.error = "failed", message if isinstance(message, str) else f"{type(failure).__name__}: {failure}"
        record.finished_at = utcnow()
        record.duration_ms = int((time.perf_counter() - began) * 1000)
        records.append(record)
        context.steps[plan.id] = {"output": record.output, "status": record.status}
        if deferred is not None:
            if checkpoint is not None:
                await checkpoint(records)
            raise deferred
        if record.status == "failed":
            status, error, stopped = "failed", f"step {plan.id!r} failed: {record.error}", True
        elif plan.type == "filter" and isinstance(record.output, dict) and not record.output.get("passed"):
            stopped = True
        elif checkpoint is not None and plan.side_effects and plan.position < len(plans) - 1:
            await checkpoint(records)  # the last step needs none: the finish stores it as durably, in one batched write
    return Outcome(status, error, records)


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
    by_workspace: dict[str, list[str]] = {}
    for execution_id, workspace_id in created:
        by_workspace.setdefault(workspace_id, []).append(execution_id)
    for workspace_id, ids in by_workspace.items():
        payloads = [{"executionIds": ids[start : start + EXECUTIONS_PER_JOB]} for start in range(0, len(ids), EXECUTIONS_PER_JOB)]
        await services.jobs.enqueue_many(session, JOB_KIND, payloads, workspace_id=workspace_id)
    return [execution_id for execution_id, _ in created]


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
    already ended or waits on a long delay. Executions run at once share their database work."""
    runner: FlowRunner = services.flow_runner
    execution = await runner.start(execution_id)
    if execution is None:
        return None
    workspace_id = execution["workspace_id"]
    done = await _done_records(services, execution_id) if execution["attempts"] > 1 else {}
    context = RunContext(services, workspace_id, execution["flow_id"], execution_id, execution["trigger_payload"], test=execution["trigger_source"] == "test")
    try:
        plans = (
            plan_steps(services.registry, execution["steps"]) if execution["version"] is None else await runner.plan(execution["flow_id"], execution["version"])
        )
    except StepFailed as error:
        await runner.finish(execution, Outcome("failed", str(error), []), alerts=not context.test)
        return "failed"

    async def checkpoint(records: list[StepRecord]) -> None:
        await runner.checkpoint(step_rows(records, workspace_id, execution_id))
        for record in records:
            record.written = True

    try:
        outcome = await run_steps(services, context, plans, done, checkpoint)
    except Deferred as wait:
        async with services.db.transaction() as session:
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
    """Run the job's executions at once. One that raises (the database went away ...) does not stop
    the others; the job then fails and its retry resumes only the executions that have not ended."""
    ids = context.payload.get("executionIds") or [context.payload["executionId"]]  # a job queued before batches
    results = await asyncio.gather(*(run_execution(context.services, execution_id) for execution_id in ids), return_exceptions=True)
    errors = [result for result in results if isinstance(result, BaseException)]
    for error in errors:
        if not isinstance(error, Exception):
            raise error  # cancelled: the worker is stopping
    if errors:
        raise errors[0]


async def run_test(services: Services, *, workspace_id: str, flow_id: str, steps: list[dict[str, Any]], payload: Any) -> str:
    """``POST /flows/{id}/test``: record an execution of ``steps`` (source ``test``) and run it now,
    without alerts. Answers the execution id."""
    now = utcnow()
    execution_id = new_id()
    async with services.db.transaction(tenant=workspace_id) as session:
        session.add(
            FlowExecution(
                id=execution_id, flow_id=flow_id, status="running", trigger_source="test", trigger_payload=payload, steps=steps, attempts=1, started_at=now
            )
        )
    execution = {"id": execution_id, "workspace_id": workspace_id, "flow_id": flow_id, "started_at": now}
    context = RunContext(services, workspace_id, flow_id, execution_id, payload, test=True)
    outcome = await run_steps(services, context, plan_steps(services.registry, steps), {})
    await services.flow_runner.finish(execution, outcome, alerts=False)
    return execution_id
