"""The progress of a loop running in an execution of the job queue: its completed items, stored as
they complete, so that the execution resumed after its process died runs only the others.

A loop (not one inside another loop's item) whose steps have side effects stores each item that
completed (``FlowLoopItem``: its index, its value, its result). The items of all the executions of
a process are written together (``ItemCheckpoints``): the first item to complete opens a window of
``WINDOW_SECONDS``, and every item completed by its end is inserted in one transaction. An item that
completed within the window before the process died runs again. When the loop ends its items are
written before its step record, and deleted in the transaction that stores that record (a
checkpoint, or the execution's end): the record holds every item's result.

Resumed, the execution hands each loop its stored items (``resumed_loops``) the way a retry hands it
the items of the loop that failed (``loop_retry``): ``Loop`` reuses each one whose value at that
index is the same, marked ``reused``, and runs the others. The loop's steps are the same: a
resumed execution runs the same version (or the same steps) as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from patchbay.core.flows.models import FlowLoopItem

if TYPE_CHECKING:
    from patchbay.core.flows.plan import StepPlan
    from patchbay.core.flows.runner import StepRecord
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

#: how long completed items wait to be written with the items completing after them
WINDOW_SECONDS = 0.2
#: items written at once without waiting for the window's end
MAX_ROWS = 500


class ItemCheckpoints:
    """Completed loop items of one process's executions, written in batches by ``write(rows)``
    (one transaction). A write that fails is logged: those items run again if the execution resumes."""

    def __init__(self, write, *, window: float = WINDOW_SECONDS, max_rows: int = MAX_ROWS) -> None:
        self._write = write
        self.window = window
        self._max = max_rows
        self._rows: list[dict[str, Any]] = []
        #: resolved when the rows buffered now are written
        self._next: asyncio.Future | None = None
        #: resolved when the rows being written are
        self._writing: asyncio.Future | None = None
        self._full = asyncio.Event()
        self._task: asyncio.Task | None = None

    def add(self, row: dict[str, Any]) -> None:
        """Buffer one item (``FlowLoopItem`` columns but the id); one whose value or result is not
        JSON is left out (the execution fails storing its outcome anyway)."""
        try:
            json.dumps([row["item"], row["result"]])
        except (TypeError, ValueError):
            return
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        self._rows.append(row)
        if len(self._rows) >= self._max:
            self._full.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run())

    async def settle(self) -> None:
        """Return once every item added so far is written (or its write failed); those waiting
        for the window are written now."""
        waiting = [future for future in (self._writing, self._next) if future is not None]
        if self._next is not None:
            self._full.set()
        if waiting:
            await asyncio.wait(waiting)

    async def _run(self) -> None:
        try:
            while self._rows:
                if not self._full.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._full.wait(), self.window)
                self._full.clear()
                rows, self._rows = self._rows, []
                self._writing, self._next = self._next, None
                try:
                    await self._write(rows)
                except Exception:  # the database went away for a moment: these items run again if resumed
                    log.warning("storing %d completed loop items failed", len(rows), exc_info=True)
                _resolve(self._writing)
                self._writing = None
        finally:  # cancelled (the process stops): no one waits for these writes
            _resolve(self._writing)
            _resolve(self._next)
            self._writing = self._next = None
            self._rows = []


def _resolve(future: asyncio.Future | None) -> None:
    if future is not None and not future.done():
        future.set_result(None)


async def resumed_loops(services: Services, execution_id: str, plans: list[StepPlan], done: dict[int, StepRecord]) -> tuple[dict[str, tuple[list, list]], bool]:
    """For a resumed execution: by step id, the items and per-item results (lists indexed by item,
    None where an item has none) stored for each loop that had not ended, and whether the execution
    has any stored item (to delete when it ends)."""
    async with services.db.session() as session:
        rows = (
            await session.execute(
                select(FlowLoopItem.position, FlowLoopItem.step_id, FlowLoopItem.item_index, FlowLoopItem.item, FlowLoopItem.result).where(
                    FlowLoopItem.execution_id == execution_id
                )
            )
        ).all()
    ids = _ids(plans)
    found: dict[str, tuple[list, list]] = {}
    for row in rows:
        if row.position in done or ids.get(row.position) != row.step_id or row.item_index < 0:
            continue
        items, results = found.setdefault(row.step_id, ([], []))
        missing = row.item_index + 1 - len(items)
        if missing > 0:
            items.extend([None] * missing)
            results.extend([None] * missing)
        items[row.item_index], results[row.item_index] = row.item, row.result
    return found, bool(rows)


def _ids(plans, found: dict[int, str] | None = None) -> dict[int, str]:
    found = {} if found is None else found
    for plan in plans:
        found[plan.position] = plan.id
        for _, block in plan.blocks:
            _ids(block, found)
    return found


def earlier_loops(retried: dict[str, tuple[list, list]], resumed: dict[str, tuple[list, list]]) -> dict[str, tuple[list, list]]:
    """The items a loop may reuse, by step id: those of the failed loop a retry retries and those
    this execution completed before it resumed; for an index both have, this execution's own."""
    merged = dict(retried)
    for step_id, (items, results) in resumed.items():
        if step_id not in merged:
            merged[step_id] = (items, results)
            continue
        old_items, old_results = merged[step_id]
        length = max(min(len(old_items), len(old_results)), len(items))
        pairs = [
            (items[index], results[index]) if index < len(items) and results[index] is not None else _pair(old_items, old_results, index)
            for index in range(length)
        ]
        merged[step_id] = ([item for item, _ in pairs], [result for _, result in pairs])
    return merged


def _pair(items: list, results: list, index: int) -> tuple[Any, Any]:
    return (items[index], results[index]) if index < min(len(items), len(results)) else (None, None)
