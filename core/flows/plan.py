"""Step plans: the steps of a flow prepared once for many executions (type looked up, ``prepare``
applied, templates compiled, timeout read), cached per published version.

A published version is immutable (publishing or reverting makes a new version number, editing a
flow touches only its draft), so ``(flow id, version)`` names one plan for good: an update reaches
the executions of the next version, in every process, with nothing to invalidate. Deleting a flow
leaves unused plans that the LRU drops.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

import attrs

from patchbay.core.flows.steps import StepFailed, step_type
from patchbay.core.flows.templating import Compiled, compile_value

DEFAULT_STEP_TIMEOUT = 30.0
MAX_STEP_TIMEOUT = 300.0
_STEP_META_KEYS = ("id", "type", "name", "timeoutSeconds", "onError", "gotoLimit")
CACHE_SIZE = 2048


@attrs.frozen
class StepPlan:
    position: int
    id: str
    type: str
    #: the step type, or None for a type unknown in this process (the step fails)
    kind: Any
    #: the configuration as written (without id, type, name and timeout): the record's input until rendered
    raw: dict[str, Any]
    config: Compiled
    timeout: float
    side_effects: bool
    #: the nested step lists of a control step (``branch``, ``switch``, ``loop``), labelled
    blocks: tuple[tuple[str, tuple[StepPlan, ...]], ...] = ()
    #: ``fail``, ``continue`` or ``goto``
    on_error: str = "fail"
    #: where ``onError: goto:<id>`` jumps: the index of that step in this step's own list, or None
    #: when the list has no such step (the step then fails the execution)
    goto_index: int | None = None
    goto_limit: int | None = None

    @property
    def control(self) -> bool:
        return bool(self.blocks) or hasattr(self.kind, "run_control")

    @property
    def last(self) -> int:
        """The position of the last step of this step's subtree."""
        return max([self.position, *(plan.last for _, block in self.blocks for plan in block)])


def plan_steps(registry: Any, steps: list[dict[str, Any]]) -> list[StepPlan]:
    """The plans of ``steps``, their types looked up in ``registry`` (plugin step types). Positions
    number the steps of the tree depth first (a flat flow's are its indexes)."""
    plans, _ = _plan_list(registry, steps or [], 0)
    return plans


def _plan_list(registry: Any, steps: list[dict[str, Any]], position: int) -> tuple[list[StepPlan], int]:
    plans = []
    for step in steps:
        plan, position = _plan_one(registry, step, position)
        plans.append(plan)
    ids = [plan.id for plan in plans]
    for index, plan in enumerate(plans):
        target = plan.on_error[5:] if plan.on_error.startswith("goto:") else None
        if target is not None:
            plans[index] = attrs.evolve(plan, on_error="goto", goto_index=ids.index(target) if target in ids else None)
    return plans, position


def _plan_one(registry: Any, step: dict[str, Any], position: int) -> tuple[StepPlan, int]:
    kind_name = str(step.get("type"))
    kind = step_type(registry, kind_name)
    raw = {key: value for key, value in step.items() if key not in _STEP_META_KEYS}
    split = getattr(kind, "split", None)
    config, nested = split(raw) if split else (raw, [])
    prepare = getattr(kind, "prepare", None)
    own = position
    position += 1
    blocks = []
    for label, children in nested:
        planned, position = _plan_list(registry, children, position)
        blocks.append((label, tuple(planned)))
    on_error = step.get("onError")
    limit = step.get("gotoLimit")
    plan = StepPlan(
        own,
        str(step.get("id")),
        kind_name,
        kind,
        config,
        compile_value(prepare(config) if prepare else config),
        float(step.get("timeoutSeconds") or DEFAULT_STEP_TIMEOUT),
        bool(getattr(kind, "side_effects", True)) or any(p.side_effects for _, b in blocks for p in b),
        tuple(blocks),
        on_error if isinstance(on_error, str) and on_error else "fail",
        None,
        limit if isinstance(limit, int) and not isinstance(limit, bool) else None,
    )
    return plan, position


class PlanCache:
    """Plans of published versions, least recently used dropped past ``CACHE_SIZE``. Executions
    that miss the same version at once share its one load."""

    def __init__(self, registry: Any, load) -> None:
        self.registry = registry
        self._load = load  # async (flow_id, version) -> steps or None
        self._plans: OrderedDict[tuple[str, int], asyncio.Future] = OrderedDict()

    async def get(self, flow_id: str, version: int) -> list[StepPlan]:
        key = (flow_id, version)
        plans = self._plans.get(key)
        if plans is None:
            plans = self._plans[key] = asyncio.ensure_future(self._plan(flow_id, version))
            if len(self._plans) > CACHE_SIZE:
                self._plans.popitem(last=False)
        else:
            self._plans.move_to_end(key)
            if plans.done() and not plans.cancelled() and plans.exception() is None:
                return plans.result()  # the common case: loaded, nothing to wait for
        try:
            return await asyncio.shield(plans)
        except Exception:
            if self._plans.get(key) is plans:
                del self._plans[key]  # a failed load (a missing version, the database away) is tried again next time
            raise

    async def _plan(self, flow_id: str, version: int) -> list[StepPlan]:
        steps = await self._load(flow_id, version)
        if steps is None:
            raise StepFailed(f"version {version} of flow {flow_id} does not exist")
        return plan_steps(self.registry, steps)
