"""Batched writes for the hot paths (CSV imports, data sync): one round trip per batch, not per row.

Rows are plain dicts keyed by column name and are converted by each column type's own bind
processor, so what lands in the database is exactly what the ORM would have written. PostgreSQL
inserts go through asyncpg's binary ``COPY``; SQLite inserts and both databases' updates go through
the driver's ``executemany``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table
from sqlalchemy.ext.asyncio import AsyncSession


def ordered_ids(count: int) -> list[str]:
    """``count`` time-ordered UUIDs (version 7 layout: milliseconds, then random bits). Rows written
    together get neighbouring ids, so bulk inserts append to the primary-key index instead of
    splitting pages all over it; the ids stay opaque strings."""
    stamp = f"{time.time_ns() // 1_000_000:012x}"
    head = f"{stamp[:8]}-{stamp[8:]}-7"
    noise = os.urandom(10 * count).hex()
    ids = []
    for index in range(0, 20 * count, 20):
        r = noise[index : index + 20]
        ids.append(f"{head}{r[:3]}-{_VARIANT[r[3]]}{r[4:7]}-{r[7:19]}")
    return ids


def ordered_id() -> str:
    return ordered_ids(1)[0]


# the two top bits of the variant nibble are 10 (RFC 4122)
_VARIANT = {digit: "89ab"[int(digit, 16) % 4] for digit in "0123456789abcdef"}


def _processors(table: Table, columns: Sequence[str], dialect) -> list:
    return [table.c[name].type.bind_processor(dialect) for name in columns]


def _tuples(rows: Sequence[dict[str, Any]], columns: Sequence[str], processors: list) -> list[tuple]:
    pairs = list(zip(columns, processors, strict=True))
    return [tuple(proc(row[name]) if proc is not None else row[name] for name, proc in pairs) for row in rows]


async def insert_rows(session: AsyncSession, table: Table, rows: Sequence[dict[str, Any]], constants: dict[str, Any] | None = None) -> None:
    """Insert ``rows`` in the session's transaction; ``constants`` are the values shared by every
    row (converted once). Together they give every column of ``table``."""
    if not rows:
        return
    constants = constants or {}
    varying = [name for name in rows[0] if name not in constants]
    connection = await session.connection()
    dialect = connection.dialect
    fixed = _tuples([constants], list(constants), _processors(table, list(constants), dialect))[0]
    values = [row + fixed for row in _tuples(rows, varying, _processors(table, varying, dialect))]
    columns = [*varying, *constants]
    if dialect.name == "postgresql":
        raw = await connection.get_raw_connection()
        await raw.driver_connection.copy_records_to_table(table.name, records=values, columns=columns)
        return
    placeholders = ", ".join("?" for _ in columns)
    await connection.exec_driver_sql(f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({placeholders})", values)


async def update_rows(session: AsyncSession, table: Table, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    """Set ``columns`` of each row found by its ``id``."""
    if not rows:
        return
    connection = await session.connection()
    dialect = connection.dialect
    names = [*columns, "id"]
    values = _tuples(rows, names, _processors(table, names, dialect))
    if dialect.name == "postgresql":
        assignments = ", ".join(f"{name} = ${index}" for index, name in enumerate(columns, start=1))
        statement = f"UPDATE {table.name} SET {assignments} WHERE id = ${len(names)}"
        raw = await connection.get_raw_connection()
        await raw.driver_connection.executemany(statement, values)
        return
    assignments = ", ".join(f"{name} = ?" for name in columns)
    await connection.exec_driver_sql(f"UPDATE {table.name} SET {assignments} WHERE id = ?", values)
