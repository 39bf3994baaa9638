"""Free-text search that stays fast at scale, chosen by the database in use.

Searchable text is normalised in Python the same way for both databases (lower case, every run of
non-alphanumeric characters turned into one space), so a query means the same thing everywhere:
every word of the query must start a word of the row (``jo exa`` finds ``John@Example.com``).

- SQLite: an external-content FTS5 virtual table ``<table>_fts`` over ``search_text``, kept current
  by triggers. It maps rows by SQLite's rowid, which ``VACUUM`` may renumber for tables without an
  integer primary key: after a VACUUM run ``INSERT INTO <table>_fts(<table>_fts) VALUES('rebuild')``.
- PostgreSQL: a GIN index over ``to_tsvector('simple', search_text)`` queried with prefix terms.

The DDL lives here and the ``data`` migration runs it; the schema-drift test ignores the FTS tables.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Table, text
from sqlalchemy.sql.elements import ColumnElement

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
MAX_QUERY_TERMS = 16


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


def fts_ddl(dialect: str, table: str) -> list[str]:
    """Statements creating the full-text index of ``table`` (a table with ``search_text``)."""
    if dialect == "sqlite":
        fts = f"{table}_fts"
        return [
            f"CREATE VIRTUAL TABLE {fts} USING fts5(search_text, content='{table}', content_rowid='rowid', "
            "tokenize='unicode61 remove_diacritics 0')",
            f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN "
            f"INSERT INTO {fts}(rowid, search_text) VALUES (new.rowid, new.search_text); END",
            f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {table} BEGIN "
            f"INSERT INTO {fts}({fts}, rowid, search_text) VALUES ('delete', old.rowid, old.search_text); END",
            f"CREATE TRIGGER {fts}_au AFTER UPDATE OF search_text ON {table} BEGIN "
            f"INSERT INTO {fts}({fts}, rowid, search_text) VALUES ('delete', old.rowid, old.search_text); "
            f"INSERT INTO {fts}(rowid, search_text) VALUES (new.rowid, new.search_text); END",
        ]
    if dialect == "postgresql":
        return [f"CREATE INDEX ix_{table}_fts ON {table} USING gin (to_tsvector('simple', search_text))"]
    return []


def fts_drop_ddl(dialect: str, table: str) -> list[str]:
    if dialect == "sqlite":
        fts = f"{table}_fts"
        return [f"DROP TRIGGER IF EXISTS {fts}_{suffix}" for suffix in ("ai", "ad", "au")] + [f"DROP TABLE IF EXISTS {fts}"]
    if dialect == "postgresql":
        return [f"DROP INDEX IF EXISTS ix_{table}_fts"]
    return []


def matches(dialect: str, table: Table, query: str) -> ColumnElement[bool] | None:
    """A condition selecting the rows of ``table`` matching ``query``; None for an empty query."""
    terms = query_terms(query)
    if not terms:
        return None
    name = table.name
    if dialect == "sqlite":
        expression = " ".join(f'"{term}"*' for term in terms)
        return text(f"{name}.rowid IN (SELECT rowid FROM {name}_fts WHERE {name}_fts MATCH :fts_query)").bindparams(
            fts_query=expression
        )
    expression = " & ".join(f"{term}:*" for term in terms)
    return text(f"to_tsvector('simple', {name}.search_text) @@ to_tsquery('simple', :fts_query)").bindparams(fts_query=expression)
