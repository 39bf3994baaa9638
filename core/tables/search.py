"""Free-text search that stays fast at scale, chosen by the database in use.

Searchable text is normalised in Python the same way for both databases (lower case, every run of
non-alphanumeric characters turned into one space) into a ``search_text`` column, so a query means
the same thing everywhere: every word of the query must start a word of the row (``joh exa`` finds
``John@Example.com``); a word of one or two characters must be a whole word of the row.

Prefix queries are what make full-text indexes slow: a prefix is expanded into every indexed word
it starts, and each of their lists is read in full (seconds for ``exa`` over a million rows, on
SQLite and PostgreSQL alike). So ``search_text`` also holds, for each word, its first 3 and first 6
characters as marker words (``qx3lov qx6lovela``). A query word then becomes one exact marker
(lists that both databases intersect lazily, seeking past what cannot match) and, when it is not
exactly 3 or 6 characters long, a ``LIKE`` check of the whole word on the few candidate rows.

- SQLite: an external-content FTS5 virtual table ``<table>_fts`` over ``search_text``. Updates and
  deletes keep it current by triggers; inserts are indexed by the application instead (an ORM insert
  through :func:`index_inserts`, a bulk insert with one ``INSERT ... SELECT`` per batch through
  :func:`index_bulk_inserts`), because a per-row trigger makes bulk loads several times slower. It
  maps rows by SQLite's rowid, which ``VACUUM`` may renumber for tables without an integer primary
  key: after a VACUUM run ``INSERT INTO <table>_fts(<table>_fts) VALUES('rebuild')``.
- PostgreSQL: a GIN index over ``to_tsvector('simple', search_text)``.

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
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_QUERY_TERMS = 16
MIN_PREFIX = 3
MARKER = "qx"


def normalize(value: str) -> str:
    return _NON_WORD.sub(" ", value.lower()).strip()


def _with_prefixes(words: list[str]) -> str:
    markers = set()
    for word in words:
        if len(word) >= 3:
            markers.add(f"{MARKER}3{word[:3]}")
            if len(word) >= 6:
                markers.add(f"{MARKER}6{word[:6]}")
    return " ".join(words) + (" " + " ".join(sorted(markers)) if markers else "")


def search_text_of(values: Iterable[Any]) -> str:
    """The searchable text of a row's values (nested values by their JSON text), with the prefix
    markers of its words."""
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
    return _with_prefixes(_WORD.findall(" ".join(parts).lower()))


def query_terms(query: str) -> list[str]:
    return normalize(query).split()[:MAX_QUERY_TERMS]


def _plan(terms: list[str]) -> tuple[list[str], list[str]]:
    """The exact index words a query needs, and the whole words to check with ``LIKE``."""
    words: list[str] = []
    checks: list[str] = []
    for term in terms:
        if len(term) < MIN_PREFIX:
            word = term
        else:
            stored = 6 if len(term) >= 6 else 3
            word = f"{MARKER}{stored}{term[:stored]}"
            if len(term) != stored:
                checks.append(term)
        if word not in words:
            words.append(word)
    return words, checks


def matches(dialect: str, table: Table, query: str) -> ColumnElement[bool] | None:
    """A condition selecting the rows of ``table`` matching ``query``; None for an empty query."""
    terms = query_terms(query)
    if not terms:
        return None
    name = table.name
    words, checks = _plan(terms)
    params: dict[str, str] = {}
    if dialect == "sqlite":
        clause = f"{name}.rowid IN (SELECT rowid FROM {name}_fts WHERE {name}_fts MATCH :fts_query)"
        params["fts_query"] = " ".join(f'"{word}"' for word in words)
    else:
        clause = f"to_tsvector('simple', {name}.search_text) @@ to_tsquery('simple', :fts_query)"
        params["fts_query"] = " & ".join(words)
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
