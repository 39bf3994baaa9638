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
_STEP_META_KEYS = ("id", "type", "name", "timeoutSeconds")
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


def plan_steps(registry: Any, steps: list[dict[str, Any]]) -> list[StepPlan]:
    """The plans of ``steps``, their types looked up in ``registry`` (plugin step types)."""
    plans = []
    for position, step in enumerate(steps or []):
        kind_name = str(step.get("type"))
        kind = step_type(registry, kind_name)
        raw = {key: value for key, value in step.items() if key not in _STEP_META_KEYS}
        prepare = getattr(kind, "prepare", None)
        plans.append(
            StepPlan(
                position,
                str(step.get("id")),
                kind_name,
                kind,
                raw,
                compile_value(prepare(raw) if prepare else raw),
                float(step.get("timeoutSeconds") or DEFAULT_STEP_TIMEOUT),
                bool(getattr(kind, "side_effects", True)),
            )
        )
    return plans


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
