"""Free-text search that stays fast at scale, chosen by the database in use.

Searchable text is normalised in Python the same way for both databases (lower case, every run of
non-alphanumeric characters turned into one space), so a query means the same thing everywhere:
every word of the query must start a word of the row (``joh exa`` finds ``John@Example.com``); a word
of one or two characters must be a whole word of the row, since expanding a very short prefix
(``7`` stands for every number that starts with 7) costs seconds on a large table.

- SQLite: an external-content FTS5 virtual table ``<table>_fts`` over ``search_text``. Updates and
  deletes keep it current by triggers; inserts are indexed by the application instead (an ORM insert
  through :func:`index_inserts`, a bulk insert with one ``INSERT ... SELECT`` per batch through
  :func:`index_bulk_inserts`), because a per-row trigger makes bulk loads several times slower. It
  maps rows by SQLite's rowid, which ``VACUUM`` may renumber for tables without an integer primary
  key: after a VACUUM run ``INSERT INTO <table>_fts(<table>_fts) VALUES('rebuild')``.
- PostgreSQL: a GIN index over ``to_tsvector('simple', search_text)`` queried with prefix terms.

The DDL is in the ``data`` migration; the schema-drift test ignores the FTS tables.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Table, event, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
MAX_QUERY_TERMS = 16
MIN_PREFIX = 3


def normalize(value: str) -> str:
    return _NON_WORD.sub(" ", value.lower()).strip()


def search_text_of(values: Iterable[Any]) -> str:
    """The normalised text of a row's values (nested values by their JSON text)."""
    parts = []
    for value in values:
        if value is None:
            continue
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, bool):
            parts.append("true" if value else "false")
        elif isinstance(value, int | float):
            parts.append(str(value))
        else:
            parts.append(json.dumps(value, ensure_ascii=False))
    return normalize(" ".join(parts))


def query_terms(query: str) -> list[str]:
    return normalize(query).split()[:MAX_QUERY_TERMS]


def matches(dialect: str, table: Table, query: str) -> ColumnElement[bool] | None:
    """A condition selecting the rows of ``table`` matching ``query``; None for an empty query."""
    terms = query_terms(query)
    if not terms:
        return None
    name = table.name
    if dialect == "sqlite":
        return _sqlite_matches(name, terms)
    expression = " & ".join(f"{term}:*" if len(term) >= MIN_PREFIX else term for term in terms)
    return text(f"to_tsvector('simple', {name}.search_text) @@ to_tsquery('simple', :fts_query)").bindparams(fts_query=expression)


def _sqlite_matches(name: str, terms: list[str]) -> ColumnElement[bool]:
    """FTS5 answers prefix queries of the stored prefix lengths (3 and 6) from one list each, lazily;
    any other prefix would be expanded term by term. So a longer term is looked up by its 3 or 6
    first characters and the candidates are checked for the whole term with ``LIKE``."""
    fts_terms: list[str] = []
    checks: list[str] = []
    for term in terms:
        if len(term) < MIN_PREFIX:
            fts_term = f'"{term}"'
        else:
            stored = 6 if len(term) >= 6 else 3
            fts_term = f'"{term[:stored]}"*'
            if len(term) != stored:
                checks.append(term)
        if fts_term not in fts_terms:
            fts_terms.append(fts_term)
    params = {"fts_query": " ".join(fts_terms)}
    clause = f"{name}.rowid IN (SELECT rowid FROM {name}_fts WHERE {name}_fts MATCH :fts_query)"
    for index, term in enumerate(checks):
        clause += f" AND (' ' || {name}.search_text) LIKE :fts_like_{index}"
        params[f"fts_like_{index}"] = f"% {term}%"
    return text(clause).bindparams(**params)


def index_inserts(model: type) -> None:
    """Index every ORM insert of ``model`` (a model with ``search_text``) on SQLite."""
    name = model.__table__.name
    statement = text(f"INSERT INTO {name}_fts(rowid, search_text) SELECT rowid, search_text FROM {name} WHERE id = :id")

    @event.listens_for(model, "after_insert")
    def _index(_mapper, connection, target) -> None:
        if connection.dialect.name == "sqlite":
            connection.execute(statement, {"id": target.id})


async def last_rowid(session: AsyncSession, table: Table) -> int:
    """On SQLite, the highest rowid of ``table`` now (0 elsewhere): pass it to
    :func:`index_bulk_inserts` after inserting in the same transaction."""
    if session.bind.dialect.name != "sqlite":
        return 0
    return int((await session.execute(text(f"SELECT coalesce(max(rowid), 0) FROM {table.name}"))).scalar() or 0)


async def index_bulk_inserts(session: AsyncSession, table: Table, after_rowid: int) -> None:
    """On SQLite, index every row inserted after ``after_rowid`` (rowids only grow while the
    transaction holds the write lock)."""
    if session.bind.dialect.name != "sqlite":
        return
    await session.execute(
        text(f"INSERT INTO {table.name}_fts(rowid, search_text) SELECT rowid, search_text FROM {table.name} WHERE rowid > :after"),
        {"after": after_rowid},
    )
