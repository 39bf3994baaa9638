"""What a retry keeps of a loop that failed: the items that had completed (``Loop`` reuses them).

A retry runs a failed loop again when it starts from the loop (or a step after it). The loop then
reuses the recorded result of each item that had completed, when running it again would do the
same: every step that had completed before the loop is reused by the retry, the loop's steps are
the same as written (always on the original version; on the current version only when the loop,
its options and the steps inside it have not changed) and the item is the same (JSON) value at the
same index. Every other item runs again. (A resumed execution hands its loops the items they had
completed in the same shape, see ``loop_progress``.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from patchbay.core.flows.models import FlowExecution, FlowExecutionStep
from patchbay.core.flows.plan import StepPlan, plan_steps
from patchbay.core.flows.steps import StepFailed

if TYPE_CHECKING:
    from patchbay.core.flows.runner import StepRecord
    from patchbay.core.services import Services


def _definitions(plans, found: dict[str, tuple] | None = None) -> dict[str, tuple]:
    """Each planned step's definition (its type, configuration and nested steps as written) by id."""
    found = {} if found is None else found
    for plan in plans:
        found[plan.id] = _definition(plan)
        for _, block in plan.blocks:
            _definitions(block, found)
    return found


def _definition(plan: StepPlan) -> tuple:
    blocks = tuple((label, tuple(_definition(child) for child in block)) for label, block in plan.blocks)
    return (plan.id, plan.type, plan.raw, plan.timeout, plan.on_error, plan.goto_index, plan.goto_limit, blocks)


async def failed_loops(services: Services, execution: dict[str, Any], plans: list[StepPlan], done: dict[int, StepRecord]) -> dict[str, tuple[list, list]]:
    """For a retry (``execution``, about to run ``plans`` reusing ``done``): by step id, the
    rendered items and per-item results of each loop that failed in the retried execution and may
    keep the items that completed (the rules above)."""
    if execution.get("trigger_source") != "retry" or not execution.get("replay_of"):
        return {}
    async with services.db.session() as session:
        original = await session.get(FlowExecution, execution["replay_of"])
        if original is None:
            return {}
        records = (await session.scalars(select(FlowExecutionStep).where(FlowExecutionStep.execution_id == original.id))).all()
    loops = [
        record
        for record in records
        if record.type == "loop"
        and record.status == "failed"
        and isinstance(record.input, dict)
        and isinstance(record.input.get("items"), list)
        and isinstance(record.output, dict)
        and isinstance(record.output.get("results"), list)
    ]
    if not loops:
        return {}
    here = _definitions(plans)
    if execution["version"] == original.version and execution["steps"] == original.steps:
        there = here
    else:
        try:
            ran = (
                plan_steps(services.registry, original.steps)
                if original.version is None
                else await services.flow_runner.plan(original.flow_id, original.version)
            )
        except StepFailed:
            return {}
        there = _definitions(ran)
    reused = {record.step_id for record in done.values()}
    found: dict[str, tuple[list, list]] = {}
    for loop in loops:
        if loop.step_id not in here or here[loop.step_id] != there.get(loop.step_id):
            continue
        earlier = {r.step_id for r in records if r.status == "completed" and r.position < loop.position and r.step_id in here}
        if earlier <= reused:
            found[loop.step_id] = (loop.input["items"], loop.output["results"])
    return found
