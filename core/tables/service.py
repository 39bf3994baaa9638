"""Tables and rows: the operations behind the HTTP routes and the flow steps ``table.upsert`` and
``table.lookup``.

Every function of a session takes the workspace explicitly (and filters by it), so it is correct in a
tenant session and in a system session alike; the operations of the HTTP API, at the end, take the
services and open the workspace's session themselves. Errors are domain errors (``core.errors``: NotFound
for an unknown table or row, Invalid naming the column for a value that does not fit the schema,
Conflict for a slug or key already taken), mapped to HTTP by ``core.http.errors``.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from sqlalchemy import Integer, String, and_, delete, func, select, text
from sqlalchemy import column as sql_column
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.errors import Conflict, Invalid, NotFound
from patchbay.core.tables.models import DataTable, TableRow
from patchbay.core.tables.schema import Schema, ValueRejected, coerce, is_column_name, validate_columns
from patchbay.core.tables.search import matches, search_text_of
from patchbay.core.timeutil import iso, utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services

SLUG_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,99}$"
_SLUG = re.compile(SLUG_PATTERN)
MAX_KEY_LENGTH = 255


def install(services: Services) -> None:
    """The plan's ``table_rows`` counter."""
    from patchbay.core.billing.limits import register_counter

    register_counter(services, "table_rows", count_workspace_rows)


@contextlib.asynccontextmanager
async def savepoint(session: AsyncSession) -> AsyncIterator[None]:
    """Flush the block's changes so an ``IntegrityError`` surfaces here. On PostgreSQL a SAVEPOINT
    keeps the transaction usable after one; SQLite's driver turns a SAVEPOINT opened before the
    first write into a commit of its own, so there the callers' pre-checks do the work and a lost
    race fails the request instead (SQLite has a single writer, such races are rare)."""
    if session.bind.dialect.name == "postgresql":
        async with session.begin_nested():
            yield
    else:
        yield
        await session.flush()


# ---------------------------------------------------------------------------------------------
# JSON shapes
# ---------------------------------------------------------------------------------------------


def table_json(table: DataTable, row_count: int | None = None) -> dict[str, Any]:
    body = {
        "id": table.id,
        "name": table.name,
        "slug": table.slug,
        "description": table.description,
        "columns": list(table.columns or []),
        "createdAt": iso(table.created_at),
        "updatedAt": iso(table.updated_at),
    }
    if row_count is not None:
        body["rowCount"] = row_count
    return body


def row_json(row: TableRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "tableId": row.table_id,
        "external_key": row.external_key,
        "data": row.data,
        "createdAt": iso(row.created_at),
        "updatedAt": iso(row.updated_at),
    }


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------


def slugify(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:100] or "table"


async def list_tables(session: AsyncSession) -> list[DataTable]:
    """The session workspace's tables, oldest first."""
    return list(await session.scalars(select(DataTable).order_by(DataTable.created_at, DataTable.id)))


async def get_table(session: AsyncSession, workspace_id: str, slug: str) -> DataTable:
    table = await session.scalar(select(DataTable).where(DataTable.workspace_id == workspace_id, DataTable.slug == slug))
    if table is None:
        raise NotFound(f"Table not found: {slug}")
    return table


async def row_counts(session: AsyncSession, table_ids: list[str]) -> dict[str, int]:
    if not table_ids:
        return {}
    result = await session.execute(select(TableRow.table_id, func.count()).where(TableRow.table_id.in_(table_ids)).group_by(TableRow.table_id))
    return {table_id: count for table_id, count in result.all()}


async def count_workspace_rows(session: AsyncSession, workspace_id: str) -> int:
    """The account's total row count, the plan resource ``table_rows`` (8A)."""
    return int(await session.scalar(select(func.count()).select_from(TableRow).where(TableRow.workspace_id == workspace_id)) or 0)


async def create_table(session: AsyncSession, *, workspace_id: str, name: str, slug: str | None, columns: Any, description: str | None = None) -> DataTable:
    if not isinstance(name, str) or not name.strip():
        raise Invalid("Validation failed: 'name' is required")
    slug = slug if slug is not None else slugify(name)
    if not isinstance(slug, str) or not _SLUG.match(slug):
        raise Invalid("Validation failed: 'slug' must be lower-case letters, digits, '-' or '_'")
    table = DataTable(workspace_id=workspace_id, name=name.strip()[:200], slug=slug, description=description, columns=validate_columns(columns or []))
    if await session.scalar(select(DataTable.id).where(DataTable.workspace_id == workspace_id, DataTable.slug == slug)):
        raise Conflict(f"A table with slug '{slug}' already exists")
    try:
        async with savepoint(session):
            session.add(table)
    except IntegrityError:
        raise Conflict(f"A table with slug '{slug}' already exists") from None
    return table


ERASE_BATCH = 1000


def merged_columns(current: list[dict[str, str]], changes: dict[str, Any]) -> list[dict[str, str]]:
    """The schema after a PATCH: ``columns`` adds or retypes the columns it names and keeps every
    other column (a merge, never a silent replacement); ``removeColumns`` names the columns to drop."""
    columns = {column["name"]: column for column in current}
    if "columns" in changes:
        for column in validate_columns(changes["columns"]):
            columns[column["name"]] = column
    removed = changes.get("removeColumns")
    if removed is not None:
        if not isinstance(removed, list) or not all(isinstance(name, str) for name in removed):
            raise Invalid("Validation failed: 'removeColumns' must be a list of column names")
        unknown = [name for name in removed if name not in columns]
        if unknown:
            raise Invalid(f"Validation failed: removeColumns names no column {', '.join(unknown)}")
        for name in removed:
            del columns[name]
    return list(columns.values())


async def _erase_values(session: AsyncSession, table: DataTable, names: set[str]) -> None:
    """Remove dropped columns' values from every row (and from its search text), batch by batch, so
    that no value lives on unseen in storage or search once its column is gone."""
    after = ""
    while True:
        rows = (
            await session.execute(
                select(TableRow.id, TableRow.data).where(TableRow.table_id == table.id, TableRow.id > after).order_by(TableRow.id).limit(ERASE_BATCH)
            )
        ).all()
        if not rows:
            return
        changed = [{"row_id": row_id, "data": {k: v for k, v in data.items() if k not in names}} for row_id, data in rows if names & set(data or {})]
        for change in changed:
            await session.execute(
                TableRow.__table__.update()
                .where(TableRow.__table__.c.id == change["row_id"])
                .values(data=change["data"], search_text=search_text_of(change["data"].values()))
            )
        after = rows[-1][0]


async def update_table(session: AsyncSession, table: DataTable, changes: dict[str, Any]) -> DataTable:
    """Rename, describe or change the schema. ``columns`` merges into the schema (adds or retypes the
    named columns, keeps the rest); ``removeColumns`` drops columns together with their values."""
    if "name" in changes:
        if not isinstance(changes["name"], str) or not changes["name"].strip():
            raise Invalid("Validation failed: 'name' must be a non-empty string")
        table.name = changes["name"].strip()[:200]
    if "description" in changes:
        if changes["description"] is not None and not isinstance(changes["description"], str):
            raise Invalid("Validation failed: 'description' must be a string")
        table.description = changes["description"]
    if "columns" in changes or "removeColumns" in changes:
        before = {column["name"] for column in table.columns or []}
        table.columns = merged_columns(list(table.columns or []), changes)
        dropped = before - {column["name"] for column in table.columns}
        if dropped:
            await _erase_values(session, table, dropped)
    if "slug" in changes and changes["slug"] != table.slug:
        slug = changes["slug"]
        if not isinstance(slug, str) or not _SLUG.match(slug):
            raise Invalid("Validation failed: 'slug' must be lower-case letters, digits, '-' or '_'")
        if await session.scalar(select(DataTable.id).where(DataTable.workspace_id == table.workspace_id, DataTable.slug == slug)):
            raise Conflict(f"A table with slug '{slug}' already exists")
        table.slug = slug
    table.updated_at = utcnow()
    try:
        async with savepoint(session):
            await session.flush()
    except IntegrityError:
        raise Conflict(f"A table with slug '{table.slug}' already exists") from None
    return table


async def delete_table(session: AsyncSession, table: DataTable) -> None:
    # rows first, with one statement: the FTS triggers see every deleted row on SQLite
    await session.execute(delete(TableRow).where(TableRow.table_id == table.id))
    await session.delete(table)


# ---------------------------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------------------------


def checked(table: DataTable, data: Any) -> dict[str, Any]:
    try:
        return Schema(table.columns or []).check(data)
    except ValueRejected as error:
        raise Invalid(f"Validation failed: {error}") from None


def _key(external_key: Any) -> str | None:
    if external_key is None:
        return None
    if isinstance(external_key, int | float) and not isinstance(external_key, bool):
        external_key = str(external_key)
    if not isinstance(external_key, str) or not external_key or len(external_key) > MAX_KEY_LENGTH:
        raise Invalid(f"Validation failed: 'external_key' must be a string of 1 to {MAX_KEY_LENGTH} characters")
    return external_key


async def enforce_row_cap(session: AsyncSession, workspace_id: str, adding: int) -> None:
    """403 ``Plan limit exceeded for table_rows`` when ``adding`` rows would pass the plan's cap."""
    from patchbay.core.billing.limits import enforce_limit

    await enforce_limit(session, workspace_id, "table_rows", adding=adding)


async def create_row(session: AsyncSession, table: DataTable, data: Any, external_key: Any = None) -> TableRow:
    values = checked(table, data)
    key = _key(external_key)
    if key is not None and await _row_by_key(session, table, key) is not None:
        raise Conflict(f"A row with external_key '{key}' already exists")
    await enforce_row_cap(session, table.workspace_id, 1)
    row = TableRow(workspace_id=table.workspace_id, table_id=table.id, external_key=key, data=values, search_text=search_text_of(values.values()))
    try:
        async with savepoint(session):
            session.add(row)
    except IntegrityError:
        raise Conflict(f"A row with external_key '{key}' already exists") from None
    return row


def _merge(row: TableRow, values: dict[str, Any]) -> None:
    merged = {**(row.data or {}), **values}
    row.data = merged
    row.search_text = search_text_of(merged.values())
    row.updated_at = utcnow()


async def _row_by_key(session: AsyncSession, table: DataTable, key: str) -> TableRow | None:
    statement = select(TableRow).where(TableRow.table_id == table.id, TableRow.external_key == key)
    if session.bind.dialect.name == "postgresql":
        statement = statement.with_for_update()
    return await session.scalar(statement)


async def upsert(session: AsyncSession, table: DataTable, data: Any, external_key: Any) -> tuple[TableRow, bool]:
    """Create the row of ``external_key`` or merge ``data`` into it: ``(row, created)``."""
    key = _key(external_key)
    if key is None:
        raise Invalid("Validation failed: 'external_key' is required")
    values = checked(table, data)
    row = await _row_by_key(session, table, key)
    if row is None:
        await enforce_row_cap(session, table.workspace_id, 1)
        row = TableRow(workspace_id=table.workspace_id, table_id=table.id, external_key=key, data=values, search_text=search_text_of(values.values()))
        try:
            async with savepoint(session):
                session.add(row)
            return row, True
        except IntegrityError:  # a concurrent upsert created it first: merge into theirs
            if session.bind.dialect.name != "postgresql":  # no savepoint: the transaction is gone (see savepoint)
                raise Conflict(f"A concurrent request created the row of external_key '{key}': try again") from None
            row = await _row_by_key(session, table, key)
            if row is None:
                raise
    _merge(row, values)
    await session.flush()
    return row, False


async def upsert_row(session: AsyncSession, *, workspace_id: str, table_slug: str, external_key: Any, data: Any) -> dict[str, Any]:
    """The flow step ``table.upsert``: the row (as the API shows it) after the upsert."""
    table = await get_table(session, workspace_id, table_slug)
    row, _ = await upsert(session, table, data, external_key)
    return row_json(row)


async def get_row(session: AsyncSession, table: DataTable, row_id: str) -> TableRow:
    row = await session.scalar(select(TableRow).where(TableRow.id == row_id, TableRow.table_id == table.id, TableRow.workspace_id == table.workspace_id))
    if row is None:
        raise NotFound(f"Row not found: {row_id}")
    return row


async def update_row(session: AsyncSession, table: DataTable, row_id: str, data: Any) -> TableRow:
    row = await get_row(session, table, row_id)
    _merge(row, checked(table, data))
    await session.flush()
    return row


async def delete_row(session: AsyncSession, table: DataTable, row_id: str) -> None:
    row = await get_row(session, table, row_id)
    await session.delete(row)


async def list_rows(session: AsyncSession, table: DataTable, *, page: int, limit: int, search: str | None = None) -> tuple[list[TableRow], int]:
    conditions = [TableRow.table_id == table.id, TableRow.workspace_id == table.workspace_id]
    if search:
        condition = matches(session.bind.dialect.name, TableRow.__table__, search)
        if condition is not None:
            conditions.append(condition)
    return await paged(session, TableRow, and_(*conditions), (TableRow.created_at, TableRow.id), page, limit)


async def paged(session: AsyncSession, model: type, where, order_by: tuple, page: int, limit: int) -> tuple[list, int]:
    """One page of ``model`` rows and the total count, in one query (the total rides along as a
    window count, so a full-text match is evaluated once); a page past the end counts separately."""
    total_column = func.count().over().label("total")
    result = await session.execute(select(model, total_column).where(where).order_by(*order_by).offset((page - 1) * limit).limit(limit))
    rows = result.all()
    if rows:
        return [row[0] for row in rows], int(rows[0][1])
    total = int(await session.scalar(select(func.count()).select_from(model).where(where)) or 0)
    return [], total


async def find_row(session: AsyncSession, table: DataTable, column: str, value: Any) -> TableRow | None:
    """The most recently updated row whose ``column`` equals ``value`` (converted to the column's
    type), or None. ``column`` may also be ``id`` or ``external_key``."""
    condition = _row_condition(session.bind.dialect.name, table, column, value)
    if condition is None:
        return None
    return await session.scalar(_newest(select(TableRow), table, condition))


def _newest(statement, table: DataTable, condition):
    statement = statement.where(TableRow.table_id == table.id, TableRow.workspace_id == table.workspace_id, condition)
    return statement.order_by(TableRow.updated_at.desc(), TableRow.id.desc()).limit(1)


def _row_condition(dialect: str, table: DataTable, column: str, value: Any, suffix: str = ""):
    """The WHERE clause matching ``column`` = ``value`` in ``table``, or None when no row can
    match; 400 for an unknown column of a strict table. ``suffix`` keeps bind names apart when
    several conditions share one statement."""
    if column in ("id", "external_key"):
        return None if value is None else getattr(TableRow, column) == str(value)
    typed = _typed(table, column, value)
    return None if typed is None else _data_equals(dialect, column, typed, suffix)


def _typed(table: DataTable, column: str, value: Any) -> Any:
    """``value`` converted to the type of data column ``column``; None when nothing can equal it."""
    if not is_column_name(column):
        raise Invalid(f"Validation failed: {column!r} is not a column name (1 to 100 characters, no quote or control character)")
    schema = Schema(table.columns or [])
    kind = schema.types.get(column)
    if schema.strict and kind is None:
        raise Invalid(f"Validation failed: Unknown column '{column}'")
    try:
        return coerce(column, kind or "json", value)
    except ValueRejected:
        return None  # nothing of that column's type can equal it


def _data_equals(dialect: str, column: str, value: Any, suffix: str = ""):
    path, given, name = f"lookup_path{suffix}", f"lookup_value{suffix}", f"lookup_column{suffix}"
    if dialect == "postgresql":
        return text(f"(table_rows.data -> :{name}) = CAST(:{given} AS jsonb)").bindparams(**{name: column, given: json.dumps(value)})
    if isinstance(value, bool):
        value = int(value)
    elif isinstance(value, dict | list):
        return text(f"json(json_extract(table_rows.data, :{path})) = json(:{given})").bindparams(**{path: f'$."{column}"', given: json.dumps(value)})
    return text(f"json_extract(table_rows.data, :{path}) = :{given}").bindparams(**{path: f'$."{column}"', given: value})


async def lookup_row(session: AsyncSession, *, workspace_id: str, table_slug: str, column: str, value: Any) -> dict[str, Any] | None:
    """One ``table.lookup``: the most recently updated matching row, or None."""
    result = (await lookup_rows(session, workspace_id=workspace_id, lookups=[(table_slug, column, value)]))[0]
    if isinstance(result, Exception):
        raise result
    return result


async def lookup_rows(session: AsyncSession, *, workspace_id: str, lookups: list[tuple[str, str, Any]]) -> list[dict[str, Any] | None | Exception]:
    """Many ``table.lookup`` steps of one workspace at once. ``lookups`` are ``(table_slug,
    column, value)``; the answer has, at each lookup's position, its row, None, or the error it
    alone would raise. The data-column lookups are one statement of one shape whatever their number
    (on PostgreSQL the arrays of lookups joined laterally to the newest matching row, on SQLite a
    JSON list of lookups each probing for its newest row); the rest cost one probe each, all in one
    statement."""
    slugs = {slug for slug, _, _ in lookups}
    tables = {t.slug: t for t in (await session.scalars(select(DataTable).where(DataTable.workspace_id == workspace_id, DataTable.slug.in_(slugs)))).all()}
    dialect = session.bind.dialect.name
    results: list[dict[str, Any] | None | Exception] = [None] * len(lookups)
    probes = {}
    arrays: dict[str, list] = {"idx": [], "tables": [], "cols": [], "vals": []}
    sqlite_lookups: list[list[Any]] = []
    for index, (slug, column, value) in enumerate(lookups):
        table = tables.get(slug)
        if table is None:
            results[index] = NotFound(f"Table not found: {slug}")
            continue
        try:
            if column not in ("id", "external_key"):
                typed = _typed(table, column, value)
                if typed is not None and dialect == "postgresql":
                    for name, item in zip(arrays, (index, table.id, column, json.dumps(typed)), strict=True):
                        arrays[name].append(item)
                elif typed is not None:  # as _data_equals compares them on SQLite
                    sqlite_lookups.append([index, table.id, f'$."{column}"', int(typed) if isinstance(typed, bool) else typed, isinstance(typed, dict | list)])
                continue
            condition = _row_condition(dialect, table, column, value, suffix=f"_{index}")
        except Invalid as error:
            results[index] = error
            continue
        if condition is not None:
            probes[index] = _newest(select(TableRow.id), table, condition).scalar_subquery().label(f"lookup_{index}")
    if arrays["idx"]:
        for found in (await session.execute(_NEWEST_OF_MANY, {"ws": workspace_id, **arrays})).mappings():
            results[found["idx"]] = {
                "id": found["id"],
                "tableId": found["table_id"],
                "external_key": found["external_key"],
                "data": found["data"],
                "createdAt": iso(found["created_at"]),
                "updatedAt": iso(found["updated_at"]),
            }
    row_ids: dict[int, str] = {}
    if sqlite_lookups:
        found = await session.execute(_NEWEST_OF_MANY_SQLITE, {"ws": workspace_id, "lookups": json.dumps(sqlite_lookups)})
        row_ids.update((index, row_id) for index, row_id in found if row_id is not None)
    if probes:
        ids = (await session.execute(select(*probes.values()))).one()
        row_ids.update((index, row_id) for index, row_id in zip(probes, ids, strict=True) if row_id is not None)
    if row_ids:
        rows = {row.id: row for row in (await session.scalars(select(TableRow).where(TableRow.id.in_(set(row_ids.values())))))}
        for index, row_id in row_ids.items():
            results[index] = row_json(rows[row_id])
    return results


_ROW = TableRow.__table__.c
_NEWEST_OF_MANY = text("""
    SELECT v.idx, r.id, r.table_id, r.external_key, r.data, r.created_at, r.updated_at
    FROM unnest(CAST(:idx AS integer[]), CAST(:tables AS text[]), CAST(:cols AS text[]), CAST(CAST(:vals AS text[]) AS jsonb[]))
         AS v(idx, table_id, col, val)
    CROSS JOIN LATERAL (
        SELECT t.id, t.table_id, t.external_key, t.data, t.created_at, t.updated_at FROM table_rows t
        WHERE t.table_id = v.table_id AND t.workspace_id = :ws AND (t.data -> v.col) = v.val
        ORDER BY t.updated_at DESC, t.id DESC LIMIT 1
    ) AS r
""").columns(sql_column("idx", Integer), _ROW.id, _ROW.table_id, _ROW.external_key, _ROW.data, _ROW.created_at, _ROW.updated_at)

_NEWEST_OF_MANY_SQLITE = text("""
    SELECT json_extract(v.value, '$[0]') AS idx, (
        SELECT t.id FROM table_rows t
        WHERE t.table_id = json_extract(v.value, '$[1]') AND t.workspace_id = :ws
          AND CASE WHEN json_extract(v.value, '$[4]')
                   THEN json(json_extract(t.data, json_extract(v.value, '$[2]'))) = json(json_extract(v.value, '$[3]'))
                   ELSE json_extract(t.data, json_extract(v.value, '$[2]')) = json_extract(v.value, '$[3]') END
        ORDER BY t.updated_at DESC, t.id DESC LIMIT 1
    ) AS id
    FROM json_each(:lookups) AS v
""").columns(sql_column("idx", Integer), sql_column("id", String))


# ---------------------------------------------------------------------------------------------
# Operations of the HTTP API: each in a session of the workspace
# ---------------------------------------------------------------------------------------------


async def tables_with_counts(services: Services, workspace_id: str) -> list[tuple[DataTable, int]]:
    """The workspace's tables with their row counts."""
    async with services.db.session(tenant=workspace_id) as session:
        tables = await list_tables(session)
        counts = await row_counts(session, [table.id for table in tables])
    return [(table, counts.get(table.id, 0)) for table in tables]


async def add_table(services: Services, workspace_id: str, *, name: str, slug: str | None, columns: Any, description: str | None) -> DataTable:
    async with services.db.transaction(tenant=workspace_id) as session:
        return await create_table(session, workspace_id=workspace_id, name=name, slug=slug, columns=columns, description=description)


async def table_of(services: Services, workspace_id: str, slug: str) -> DataTable:
    """The workspace's table ``slug``; NotFound when there is none."""
    async with services.db.session(tenant=workspace_id) as session:
        return await get_table(session, workspace_id, slug)


async def table_with_count(services: Services, workspace_id: str, slug: str, changes: dict[str, Any] | None = None) -> tuple[DataTable, int]:
    """The table ``slug`` (after ``changes``, see :func:`update_table`) with its row count."""
    async with services.db.transaction(tenant=workspace_id) as session:
        table = await get_table(session, workspace_id, slug)
        if changes is not None:
            await update_table(session, table, changes)
        counts = await row_counts(session, [table.id])
    return table, counts.get(table.id, 0)


async def remove_table(services: Services, workspace_id: str, slug: str) -> None:
    async with services.db.transaction(tenant=workspace_id) as session:
        await delete_table(session, await get_table(session, workspace_id, slug))


async def rows_of(services: Services, workspace_id: str, slug: str, *, page: int, limit: int, search: str | None) -> tuple[list[TableRow], int]:
    async with services.db.session(tenant=workspace_id) as session:
        return await list_rows(session, await get_table(session, workspace_id, slug), page=page, limit=limit, search=search)


async def rows_after(
    services: Services, workspace_id: str, slug: str, *, after: str | None, limit: int, search: str | None
) -> tuple[list[TableRow], str | None]:
    """A page of the table's rows in id order (ids are time-ordered) by keyset: those after the
    row id ``after``, matching ``search`` when given. Answers the rows and the id to continue after
    (None on the last page). NotFound for an unknown table."""
    async with services.db.session(tenant=workspace_id) as session:
        table = await get_table(session, workspace_id, slug)
        conditions = [TableRow.table_id == table.id, TableRow.workspace_id == workspace_id]
        if after:
            conditions.append(TableRow.id > after)
        if search:
            condition = matches(session.bind.dialect.name, TableRow.__table__, search)
            if condition is not None:
                conditions.append(condition)
        rows = list((await session.scalars(select(TableRow).where(*conditions).order_by(TableRow.id).limit(limit + 1))).all())
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1].id if more else None)


async def add_row(services: Services, workspace_id: str, slug: str, data: Any, external_key: Any) -> TableRow:
    async with services.db.transaction(tenant=workspace_id) as session:
        return await create_row(session, await get_table(session, workspace_id, slug), data, external_key)


async def upsert_by_key(services: Services, workspace_id: str, slug: str, data: Any, external_key: Any) -> tuple[TableRow, bool]:
    async with services.db.transaction(tenant=workspace_id) as session:
        return await upsert(session, await get_table(session, workspace_id, slug), data, external_key)


async def newest_row_where(services: Services, workspace_id: str, slug: str, column: str, value: Any) -> TableRow | None:
    async with services.db.session(tenant=workspace_id) as session:
        return await find_row(session, await get_table(session, workspace_id, slug), column, value)


async def change_row(services: Services, workspace_id: str, slug: str, row_id: str, data: Any) -> TableRow:
    async with services.db.transaction(tenant=workspace_id) as session:
        return await update_row(session, await get_table(session, workspace_id, slug), row_id, data)


async def remove_row(services: Services, workspace_id: str, slug: str, row_id: str) -> None:
    async with services.db.transaction(tenant=workspace_id) as session:
        await delete_row(session, await get_table(session, workspace_id, slug), row_id)
