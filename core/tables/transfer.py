"""CSV import and export of a table's rows, streamed.

Import: the header names the columns (``external_key`` and ``id`` are matched against existing
rows: a match is merged into, anything else is created). Records are processed in batches of
``BATCH`` rows, each batch in its own transaction with one query per kind of lookup and one bulk
write per kind of change; the plan's row cap is checked per batch. A record that does not fit (wrong
field count, a value its column refuses) is rejected with its line number and the rest go on. A
problem with the header itself (missing, empty or unknown names) refuses the whole file with 400
before anything is written.

Export writes text cells neutralized for spreadsheets and import restores them
(``csvstream.neutralize``): numbers are written as numbers, so ``-5`` in a number column stays ``-5``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import attrs
from sqlalchemy import String, select, text

from patchbay.core.errors import Invalid
from patchbay.core.storage.db import Database
from patchbay.core.tables import bulk
from patchbay.core.tables.csvstream import CsvWriter, csv_line, csv_records, neutralize, read_header, restore
from patchbay.core.tables.models import DataTable, TableRow
from patchbay.core.tables.schema import RESERVED, Schema, ValueRejected
from patchbay.core.tables.search import index_bulk_inserts, last_rowid, search_text_of
from patchbay.core.tables.service import MAX_KEY_LENGTH, enforce_row_cap
from patchbay.core.timeutil import utcnow

BATCH = 5_000
MAX_REPORTED_ERRORS = 100
EXPORT_BATCH = 2_000
#: parsing is CPU work: give the loop to the batch being written this often (rows)
YIELD_EVERY = 250


@attrs.define
class ImportReport:
    created: int = 0
    updated: int = 0
    rejected: int = 0
    errors: list[dict[str, Any]] = attrs.field(factory=list)

    def reject(self, line: int, message: str) -> None:
        self.rejected += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append({"line": line, "message": message})

    def json(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "updated": self.updated,
            "rejected": self.rejected,
            "total": self.created + self.updated + self.rejected,
            "errors": self.errors,
        }


@attrs.frozen
class _Item:
    line: int
    row_id: str | None
    key: str | None
    values: dict[str, Any]


async def import_csv(db: Database, table: DataTable, chunks: AsyncIterator[str], report: ImportReport | None = None) -> ImportReport:
    """Import the CSV text of ``chunks``; ``report`` (a new one by default) counts the rows as each
    batch is written, so a caller can show the progress."""
    schema = Schema(table.columns or [])
    report = report if report is not None else ImportReport()
    header: list[str] | None = None
    pending: list[_Item] = []
    writing: asyncio.Task | None = None  # the previous batch, written while the next one is parsed
    try:
        async for batch in csv_records(chunks):
            for line, fields in batch:
                if header is None:
                    header = _check_header(schema, fields)
                    continue
                item = _item(schema, header, line, fields, report)
                if item is not None:
                    pending.append(item)
                    if writing is not None and not len(pending) % YIELD_EVERY:
                        await asyncio.sleep(0)  # let the write in flight take its next step
                if len(pending) >= BATCH:
                    if writing is not None:
                        await writing
                    writing = asyncio.ensure_future(_write(db, table, pending, report))
                    pending = []
        if header is None:
            raise Invalid("CSV header line is missing")
        if writing is not None:
            await writing
            writing = None
        await _write(db, table, pending, report)
    finally:
        if writing is not None and not writing.done():
            writing.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await writing
    return report


def _check_header(schema: Schema, fields: list[str]) -> list[str]:
    names = read_header([restore(field) for field in fields])
    if schema.strict:
        for name in names:
            if name not in RESERVED and name not in schema.types:
                raise Invalid(f"CSV header names unknown column '{name}' (the first line must be the header)")
    return names


def _item(schema: Schema, header: list[str], line: int, fields: list[str], report: ImportReport) -> _Item | None:
    if len(fields) != len(header):
        report.reject(line, f"expected {len(header)} fields, found {len(fields)}")
        return None
    values: dict[str, Any] = {}
    row_id = key = None
    try:
        for name, cell in zip(header, fields, strict=True):
            if name == "id":
                row_id = cell.strip() or None
            elif name == "external_key":
                key = restore(cell) or None
            else:
                values[name] = schema.cell(name, restore(cell))
    except ValueRejected as error:
        report.reject(line, str(error))
        return None
    if key is not None and len(key) > MAX_KEY_LENGTH:
        report.reject(line, f"external_key is longer than {MAX_KEY_LENGTH} characters")
        return None
    return _Item(line, row_id, key, values)


async def _write(db: Database, table: DataTable, items: list[_Item], report: ImportReport) -> None:
    if not items:
        return
    async with db.transaction(tenant=table.workspace_id) as session:
        ids = {item.row_id for item in items if item.row_id}
        keys = {item.key for item in items if item.key}
        existing: dict[str, dict[str, Any]] = {}  # row id -> {"id", "external_key", "data"}
        by_key: dict[str, str] = {}
        for row_id, key, data in await _existing(session, table, ids, keys):
            existing[row_id] = {"id": row_id, "external_key": key, "data": dict(data or {})}
            if key is not None:
                by_key[key] = row_id
        now = utcnow()
        created: dict[str, dict[str, Any]] = {}
        updated: dict[str, dict[str, Any]] = {}
        fresh = iter(bulk.ordered_ids(len(items)))
        for item in items:
            target_id = item.row_id if item.row_id in existing else by_key.get(item.key) if item.key else None
            if target_id is not None:
                target = existing[target_id]
                target["data"].update(item.values)
                if item.key and target["external_key"] is None:
                    target["external_key"] = item.key
                    by_key[item.key] = target_id
                (created if target_id in created else updated)[target_id] = target
                report.updated += 1
            else:
                row = {"id": next(fresh), "external_key": item.key, "data": dict(item.values)}
                existing[row["id"]] = created[row["id"]] = row
                if item.key:
                    by_key[item.key] = row["id"]
                report.created += 1
        if created:
            await enforce_row_cap(session, table.workspace_id, len(created))
        inserts = [
            {"id": row["id"], "external_key": row["external_key"], "data": row["data"], "search_text": search_text_of(row["data"].values())}
            for row in created.values()
        ]
        constants = {"workspace_id": table.workspace_id, "table_id": table.id, "created_at": now, "updated_at": now}
        changes = [
            {"id": row["id"], "external_key": row["external_key"], "data": row["data"], "search_text": search_text_of(row["data"].values()), "updated_at": now}
            for row_id, row in updated.items()
            if row_id not in created
        ]
        after = await last_rowid(session, TableRow.__table__)
        await bulk.insert_rows(session, TableRow.__table__, inserts, constants)
        await index_bulk_inserts(session, TableRow.__table__, after)
        await bulk.update_rows(session, TableRow.__table__, changes, ["external_key", "data", "search_text", "updated_at"])


_PG_BY_KEYS = text(
    # one index probe per key whatever the planner's statistics say (they lag behind a table
    # that an import is filling, and a plain IN then scans every row of the table)
    "SELECT t.id, t.external_key, t.data FROM unnest(CAST(:keys AS varchar[])) AS k(key) CROSS JOIN LATERAL "
    "(SELECT r.id, r.external_key, r.data FROM table_rows r WHERE r.table_id = :table_id AND r.external_key = k.key LIMIT 1) AS t"
).columns(id=String, external_key=String, data=TableRow.__table__.c.data.type)


async def _existing(session, table: DataTable, ids: set[str], keys: set[str]) -> list[tuple[str, str | None, dict]]:
    columns = TableRow.__table__.c
    found = []
    lookups = [(columns.id, list(ids))]
    if session.bind.dialect.name == "postgresql":
        if keys:
            found += (await session.execute(_PG_BY_KEYS, {"keys": list(keys), "table_id": table.id})).all()
    else:
        lookups.append((columns.external_key, list(keys)))
    for column, values in lookups:
        for start in range(0, len(values), 900):  # under SQLite's bound-parameter limit
            result = await session.execute(
                select(columns.id, columns.external_key, columns.data).where(columns.table_id == table.id, column.in_(values[start : start + 900]))
            )
            found += result.all()
    return found


# ---------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        return neutralize(value)
    return value  # a number: -5 is not a formula


async def export_csv(db: Database, table: DataTable) -> AsyncIterator[str]:
    """The header line, then every row in id order, fetched ``EXPORT_BATCH`` at a time. A table
    without a schema exports its data as one JSON column ``data``."""
    names = [column["name"] for column in table.columns or []]
    yield csv_line(["id", "external_key", *(neutralize(name) for name in names or ["data"])])
    writer = CsvWriter()
    columns = TableRow.__table__.c
    after = ""
    while True:
        async with db.session(tenant=table.workspace_id) as session:
            result = await session.execute(
                select(columns.id, columns.external_key, columns.data)
                .where(columns.table_id == table.id, columns.id > after)
                .order_by(columns.id)
                .limit(EXPORT_BATCH)
            )
            batch = result.all()
        if not batch:
            return
        if names:
            lines = ([row_id, _cell(key), *(_cell(data.get(name)) for name in names)] for row_id, key, data in batch)
        else:
            lines = ([row_id, _cell(key), json.dumps(data, ensure_ascii=False)] for row_id, key, data in batch)
        yield writer.rows(lines)
        after = batch[-1][0]
