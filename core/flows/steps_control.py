"""The step types that steer an execution: ``branch``, ``switch`` and ``loop`` (they hold nested
step lists), ``call_flow`` (another flow of the workspace as a step) and ``respond`` (the answer of
a synchronous run).

A step type that holds steps has ``split(config) -> (own configuration, [(label, steps)])``, which
the planner calls to plan the nested lists apart (their templates are rendered when they run, not
with the step's own), and ``run_control(walk, context, plan, config, frame)``: the engine renders
the step's own configuration and hands it the walk of the execution (``engine.Walk``), whose
``block`` runs a list of planned steps in a frame and ``skip`` records a list ``skipped``. The
step's output is what ``run_control`` answers; a step failing inside fails the control step,
whose ``onError`` then decides.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import attrs

from patchbay.core.errors import DomainError
from patchbay.core.flows.step_schemas import MAX_LOOP_CONCURRENCY, MAX_LOOP_ITEMS
from patchbay.core.flows.steps import RunContext, StepFailed, as_expression, truthy

if TYPE_CHECKING:
    from patchbay.core.flows.engine import Frame, Walk
    from patchbay.core.flows.plan import StepPlan

#: how deep ``call_flow`` may nest (a flow calling a flow calling ...); deeper calls fail the step
MAX_CALL_DEPTH = 5


class FailedWith(StepFailed):
    """A control step failed and still has an output to record (a loop's per-item results)."""

    def __init__(self, message: str, output: Any) -> None:
        super().__init__(message)
        self.output = output


def _block(plan: StepPlan, label: str) -> tuple[StepPlan, ...]:
    return next((block for name, block in plan.blocks if name == label), ())


def _steps(value: Any) -> list[dict[str, Any]]:
    return [step for step in value if isinstance(step, dict)] if isinstance(value, list) else []


async def _take(walk: Walk, context: RunContext, plan: StepPlan, chosen: str, frame: Frame) -> Any:
    """Run the block ``chosen``, record the others ``skipped``; answers the block's last output."""
    for label, block in plan.blocks:
        if label != chosen:
            walk.skip(block, frame)
    block = _block(plan, chosen)
    await walk.block(block, context, frame)
    return walk.last_output(block, context)


class Branch:
    side_effects = False

    def split(self, config: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, list[dict[str, Any]]]]]:
        paths = [path for path in config.get("paths") or [] if isinstance(path, dict)] if isinstance(config.get("paths"), list) else []
        own = {**config, "paths": [{"name": str(path.get("name")), "condition": as_expression(path.get("condition"))} for path in paths]}
        own.pop("default", None)
        blocks = [(str(path.get("name")), _steps(path.get("steps"))) for path in paths]
        return own, [*blocks, ("default", _steps(config.get("default")))]

    async def run_control(self, walk: Walk, context: RunContext, plan: StepPlan, config: dict[str, Any], frame: Frame) -> Any:
        chosen = next((path["name"] for path in config.get("paths") or [] if truthy(path.get("condition"))), "default")
        return {"path": chosen, "output": await _take(walk, context, plan, chosen, frame)}


class Switch:
    side_effects = False

    def split(self, config: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, list[dict[str, Any]]]]]:
        cases = config.get("cases") if isinstance(config.get("cases"), dict) else {}
        own = {key: value for key, value in config.items() if key not in ("cases", "default")}
        return own, [*((str(name), _steps(steps)) for name, steps in cases.items()), ("default", _steps(config.get("default")))]

    async def run_control(self, walk: Walk, context: RunContext, plan: StepPlan, config: dict[str, Any], frame: Frame) -> Any:
        value = config.get("value")
        text = value if isinstance(value, str) else json.dumps(value)
        cases = {label for label, _ in plan.blocks[:-1]}
        chosen = text if text in cases else "default"
        return {"value": value, "path": chosen, "output": await _take(walk, context, plan, chosen, frame)}


class Loop:
    """Items run in contexts of their own (``loop.item``, ``loop.index``, the outputs of the
    item's steps); a ``filter`` that does not pass skips the rest of its item. Once an item has
    failed no new item starts; the loop fails after the running ones end. Run again by a retry of
    an execution it failed in, or resumed after its process died, it keeps the result of each item
    that had completed with the same value, marked ``reused``, and runs the others (``loop_retry``
    and ``loop_progress`` say when; for a resume, the items a loop completes are stored as they
    complete)."""

    side_effects = False

    def split(self, config: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, list[dict[str, Any]]]]]:
        return {key: value for key, value in config.items() if key != "steps"}, [("steps", _steps(config.get("steps")))]

    async def run_control(self, walk: Walk, context: RunContext, plan: StepPlan, config: dict[str, Any], frame: Frame) -> Any:
        items = config.get("items")
        if not isinstance(items, list):
            raise StepFailed(f"'items' must be a list, not {type(items).__name__}")
        if len(items) > MAX_LOOP_ITEMS:
            raise StepFailed(f"'items' has {len(items)} items; a loop takes at most {MAX_LOOP_ITEMS}")
        concurrency = config.get("concurrency") or 1
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= MAX_LOOP_CONCURRENCY:
            raise StepFailed(f"'concurrency' must be an integer from 1 to {MAX_LOOP_CONCURRENCY}")
        block = _block(plan, "steps")
        slots = asyncio.Semaphore(concurrency)
        failed: list[str] = []
        frames: list[Frame | None] = [None] * len(items)
        earlier = context.earlier_loops.pop(plan.id, None) if context.loop is None else None

        async def one(index: int, item: Any) -> dict[str, Any]:
            kept = _kept_result(earlier, index, item) if earlier is not None else None
            if kept is not None:
                return kept
            async with slots:
                if failed:
                    return {"index": index, "status": "skipped", "output": None, "error": None}
                item_context = attrs.evolve(context, steps=dict(context.steps), loop={"item": item, "index": index}, step_id="")
                item_frame = frames[index] = walk.item_frame()
                await walk.block(block, item_context, item_frame)
                if item_frame.error is not None:
                    failed.append(f"item {index}: {item_frame.error}")
                    return {"index": index, "status": "failed", "output": None, "error": item_frame.error}
                status = "skipped" if item_frame.halted else "completed"
                result = {"index": index, "status": status, "output": walk.last_output(block, item_context), "error": None}
                if status == "completed":
                    walk.keep_item(context, plan, index, item, result)
                return result

        results = await asyncio.gather(*(one(index, item) for index, item in enumerate(items)))
        await walk.items_stored()
        walk.summarize(block, [f for f in frames if f is not None], frame)
        counts = {status: sum(1 for r in results if r["status"] == status) for status in ("completed", "failed", "skipped")}
        output = {"count": len(items), **counts, "results": results}
        if failed:
            raise FailedWith(failed[0], output)
        return output


def _kept_result(earlier: tuple[list, list], index: int, item: Any) -> dict[str, Any] | None:
    """The result of item ``index`` in the earlier run (marked ``reused``) when it had completed
    with the same (JSON) value; else None: the item runs."""
    items, results = earlier
    if index >= min(len(items), len(results)) or json.dumps(items[index], sort_keys=True) != _json(item):
        return None
    result = results[index]
    if not isinstance(result, dict) or result.get("status") != "completed" or result.get("index") != index:
        return None
    return {**result, "reused": True}


def _json(value: Any) -> str | None:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return None


class CallFlow:
    """Runs the called flow's published version as an execution of its own (source ``call_flow``),
    within this step's timeout."""

    side_effects = True

    async def run(self, context: RunContext, config: dict[str, Any]) -> Any:
        from patchbay.core.flows.engine import run_published

        flow_id = config.get("flowId")
        if not isinstance(flow_id, str) or not flow_id:
            raise StepFailed("'flowId' is required")
        if context.depth + 1 > MAX_CALL_DEPTH:
            raise StepFailed(f"flows call flows more than {MAX_CALL_DEPTH} deep; the call to {flow_id} is refused")
        try:
            execution_id, outcome, reply = await run_published(
                context.services,
                workspace_id=context.workspace_id,
                flow_id=flow_id,
                payload=config.get("input"),
                source="call_flow",
                depth=context.depth + 1,
                test=context.test,
            )
        except DomainError as error:  # no such flow in the workspace, or it does not run
            raise StepFailed(error.message) from None
        response = reply.get("response")
        last = next((r.output for r in sorted(outcome.records, key=lambda r: -r.position) if r.status == "completed"), None)
        output = {"executionId": execution_id, "status": outcome.status, "output": response["body"] if response else last}
        if outcome.status != "completed":
            raise FailedWith(f"called flow {flow_id} failed: {outcome.error}", output)
        return output


class Respond:
    side_effects = False
    never_waits = True

    async def run(self, context: RunContext, config: dict[str, Any]) -> Any:
        status = config.get("status", 200)
        try:
            status = int(status)
        except (TypeError, ValueError):
            raise StepFailed(f"'status' must be a number, not {status!r}") from None
        if not 200 <= status <= 499:
            raise StepFailed("'status' must be from 200 to 499")
        headers = config.get("headers") or {}
        if not isinstance(headers, dict):
            raise StepFailed("'headers' must be an object")
        response = {"status": status, "headers": {str(k): str(v) for k, v in headers.items()}, "body": config.get("body")}
        context.reply.setdefault("response", response)
        return response


CONTROL_TYPES: dict[str, Any] = {
    "branch": Branch(),
    "switch": Switch(),
    "loop": Loop(),
    "call_flow": CallFlow(),
    "respond": Respond(),
}
