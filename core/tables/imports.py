"""CSV imports run in the background with their progress, for the console: the file is uploaded
once, :func:`start_import` runs :func:`~patchbay.core.tables.transfer.import_csv` (the API's
import) in a task of this process, and :func:`import_status` answers how far it got (text read,
rows created, updated and rejected) until it is done or failed.

The progress lives in this process's memory (``services.table_imports``), keyed by the workspace
and a random id: another workspace's id is not found, and a status is forgotten
``KEEP_SECONDS`` after the import ends or when the process stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import attrs

from patchbay.core.errors import DomainError, NotFound
from patchbay.core.tables.models import DataTable
from patchbay.core.tables.transfer import ImportReport, import_csv

if TYPE_CHECKING:
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

#: how long a finished import's status is kept
KEEP_SECONDS = 3600
#: the text handed to the parser at a time (the progress moves by this much)
SLICE = 64 * 1024


@attrs.define
class TableImport:
    """One import's progress: ``state`` running, done or failed."""

    id: str
    workspace_id: str
    table_slug: str
    total_chars: int
    read_chars: int = 0
    state: str = "running"
    error: str | None = None
    report: ImportReport = attrs.field(factory=ImportReport)
    ended_at: float | None = None

    def json(self) -> dict[str, Any]:
        percent = 100 if self.state != "running" else int(100 * self.read_chars / self.total_chars) if self.total_chars else 0
        return {"id": self.id, "table": self.table_slug, "state": self.state, "percent": percent, "error": self.error, **self.report.json()}


@attrs.define
class TableImports:
    """The imports of this process (``services.table_imports``)."""

    imports: dict[tuple[str, str], TableImport] = attrs.field(factory=dict)
    tasks: set[asyncio.Task] = attrs.field(factory=set)

    def forget_old(self) -> None:
        cutoff = time.monotonic() - KEEP_SECONDS
        for key, item in list(self.imports.items()):
            if item.ended_at is not None and item.ended_at < cutoff:
                del self.imports[key]

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        for task in list(self.tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def install(services: Services) -> None:
    services.table_imports = TableImports()

    @contextlib.asynccontextmanager
    async def running(services: Services) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await services.table_imports.close()

    services.add_resource(running)


async def _slices(item: TableImport, text: str) -> AsyncIterator[str]:
    for start in range(0, len(text), SLICE):
        piece = text[start : start + SLICE]
        item.read_chars = start + len(piece)
        yield piece


async def _run(services: Services, item: TableImport, table: DataTable, text: str) -> None:
    # import_csv fills the report batch by batch; the status reads it as it grows
    try:
        await import_csv(services.db, table, _slices(item, text), item.report)
        item.state = "done"
    except DomainError as error:
        item.state, item.error = "failed", error.message
    except Exception:  # the status says it failed; the reason goes to the log
        log.exception("CSV import %s into %s failed", item.id, item.table_slug)
        item.state, item.error = "failed", "The import stopped on an unexpected error."
    finally:
        item.ended_at = time.monotonic()


async def start_import(services: Services, workspace_id: str, table: DataTable, text: str) -> TableImport:
    """Start importing ``text`` (CSV, the header line first) into the workspace's ``table`` in the
    background; answers its status, which :func:`import_status` updates."""
    imports: TableImports = services.table_imports
    imports.forget_old()
    item = TableImport(id=secrets.token_urlsafe(12), workspace_id=workspace_id, table_slug=table.slug, total_chars=len(text))
    imports.imports[(workspace_id, item.id)] = item
    task = asyncio.ensure_future(_run(services, item, table, text.removeprefix("\ufeff")))
    imports.tasks.add(task)
    task.add_done_callback(imports.tasks.discard)
    return item


def import_status(services: Services, workspace_id: str, import_id: str) -> TableImport:
    """The workspace's import ``import_id``; NotFound for another workspace's or a forgotten one."""
    item = services.table_imports.imports.get((workspace_id, import_id))
    if item is None:
        raise NotFound("Import not found")
    return item
