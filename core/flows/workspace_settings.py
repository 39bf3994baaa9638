"""A workspace's flow settings, kept in ``Workspace.settings["flows"]``:

- ``errorFlowId``: a published flow of the workspace started (trigger source ``error``) by every
  failed execution of its other flows, with ``{executionId, flowId, flowName, stepId, error}``
  as its trigger payload. A failed run of the error flow itself, or of a run it started, starts
  nothing: an error flow cannot trigger itself.
- ``maxConcurrentExecutions``: how many of the workspace's queued executions run at once, across
  every process; the others stay ``pending`` and are admitted as running ones end (``engine``).

Each process caches them for ``CACHE_SECONDS`` (they are read on every job of executions).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import attrs
from sqlalchemy import select

from patchbay.core.errors import Invalid, NotFound
from patchbay.core.flows.models import Flow
from patchbay.core.workspaces.models import Workspace

if TYPE_CHECKING:
    from patchbay.core.services import Services

CACHE_SECONDS = 5.0
MAX_CONCURRENCY = 1000


@attrs.frozen
class FlowSettings:
    error_flow_id: str | None = None
    max_concurrent: int | None = None

    def json(self) -> dict[str, Any]:
        return {"errorFlowId": self.error_flow_id, "maxConcurrentExecutions": self.max_concurrent}


def _parse(stored: Any) -> FlowSettings:
    stored = stored if isinstance(stored, dict) else {}
    return FlowSettings(stored.get("errorFlowId"), stored.get("maxConcurrentExecutions"))


_cache: dict[tuple[int, str], tuple[float, FlowSettings]] = {}


def forget(services: Services, workspace_id: str) -> None:
    _cache.pop((id(services), workspace_id), None)


async def flow_settings(services: Services, workspace_id: str) -> FlowSettings:
    """The workspace's flow settings, cached for ``CACHE_SECONDS``."""
    key = (id(services), workspace_id)
    hit = _cache.get(key)
    if hit is not None and hit[0] > time.monotonic():
        return hit[1]
    async with services.db.session() as session:
        settings = _parse((await session.scalar(select(Workspace.settings).where(Workspace.id == workspace_id)) or {}).get("flows"))
    _cache[key] = (time.monotonic() + CACHE_SECONDS, settings)
    return settings


async def update_flow_settings(services: Services, *, workspace_id: str, values: dict[str, Any]) -> FlowSettings:
    """Set the keys given (``None`` clears one). ``errorFlowId`` must name a flow of the workspace
    (``NotFound``); ``maxConcurrentExecutions`` is 1 to ``MAX_CONCURRENCY``."""
    async with services.db.transaction() as session:
        workspace = await session.get(Workspace, workspace_id, with_for_update=services.db.is_postgres)
        if workspace is None:
            raise NotFound("Workspace not found")
        current = dict((workspace.settings or {}).get("flows") or {})
        if values.get("errorFlowId") is not None:
            found = await session.scalar(select(Flow.id).where(Flow.id == values["errorFlowId"], Flow.workspace_id == workspace_id))
            if found is None:
                raise NotFound(f"Flow not found: {values['errorFlowId']}")
        limit = values.get("maxConcurrentExecutions")
        if limit is not None and not 1 <= limit <= MAX_CONCURRENCY:
            raise Invalid(f"maxConcurrentExecutions must be in [1, {MAX_CONCURRENCY}]")
        current.update(values)
        workspace.settings = {**(workspace.settings or {}), "flows": current}
    forget(services, workspace_id)
    return _parse(current)
