"""SQL constructs shared by the storage layer's hot paths.

:func:`one_of` is "``column`` is one of these values" with one statement text whatever the number of
values. ``column.in_(values)`` is an *expanding* ``IN``: SQLAlchemy re-renders the statement for
every execution (``IN (__[POSTCOMPILE_...])`` becomes one placeholder per value), and on PostgreSQL
each new length is a new statement for asyncpg to ``PREPARE``. ``one_of`` compiles instead:

- on PostgreSQL to ``column = ANY(:values)``, one bind parameter holding the values as an array of
  the column's type (``VARCHAR[]`` for a ``String`` id, ``INTEGER[]`` for an ``Integer``); asyncpg
  sends the Python list as that array, and the prepared statement is reused for every length;
- on any other database (SQLite) to the usual expanding ``column IN (...)``.

Both forms answer the same rows: no value (an empty list) matches nothing, ``NULL`` matches nothing,
and ``~one_of(...)`` (``NOT``) keeps SQL's three-valued logic of ``NOT IN``. The values are bind
parameters of both forms: they are not part of SQLAlchemy's cache key, so a statement built with
``one_of`` is compiled once per shape and dialect and served from the compiled cache afterwards.

:func:`unnest_insert` is the same idea for a multi-row ``INSERT`` on PostgreSQL: ``INSERT ... SELECT
FROM unnest(:column_1, :column_2, ...)``, one array parameter per column, so one statement text
whatever the number of rows (a multi-row ``VALUES`` is a new text, and a new ``PREPARE``, per
number of rows).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import ARRAY, JSON, Boolean, Table, Text, all_, any_, bindparam, cast, func, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import BinaryExpression, ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal


class OneOf(ColumnElement[bool]):
    """``column`` is one of a list of values; build it with :func:`one_of`, negate it with ``~``.

    It holds both renderings, each a plain SQLAlchemy expression with its own bind parameter (the
    same values in both), and the compiler picks one per dialect. Both are in the cache key's
    traversal, so whichever one is rendered gets this execution's values."""

    __visit_name__ = "one_of"
    inherit_cache = True
    type = Boolean()
    _is_implicitly_boolean = True  # a condition as it stands: no "= 1" where booleans are not native
    _traverse_internals = [("expanding", InternalTraversal.dp_clauseelement), ("array", InternalTraversal.dp_clauseelement)]

    def __init__(self, expanding: ColumnElement[bool], array: BinaryExpression[bool]) -> None:
        self.expanding = expanding  # column IN (...)
        self.array = array  # column = ANY(:values), or column <> ALL(:values) once negated

    @property
    def _from_objects(self) -> list[Any]:
        return self.expanding._from_objects

    def _negate(self) -> OneOf:
        """``NOT IN`` and ``<> ALL``: true for every value when there is none, ``NULL`` for ``NULL``
        (not ``NOT (column = ANY(...))`` spelled ``column != ANY(...)``, which SQLAlchemy would make)."""
        column, values = self.array.left, self.array.right.element
        negated = column != all_(values) if self.array.operator is operators.eq else column == any_(values)
        return OneOf(~self.expanding, negated)


def one_of(column: ColumnElement[Any], values: Iterable[Any]) -> OneOf:
    """``column`` is one of ``values`` (any iterable; read once), the array's elements of the
    column's type. Use it instead of ``column.in_(values)`` where the number of values varies from
    one execution to the next."""
    values = list(values)
    return OneOf(column.in_(values), column == any_(bindparam(None, values, type_=ARRAY(column.type), unique=True)))


def one_of_param(column: ColumnElement[Any], name: str) -> OneOf:
    """:func:`one_of` with the values given at execution as the parameter ``name`` (a list), for a
    statement built once: ``connection.execute(statement, {name: [...]})``."""
    return OneOf(column.in_(bindparam(name, expanding=True)), column == any_(bindparam(name, type_=ARRAY(column.type))))


@compiles(OneOf)
def _expanding_in(element: OneOf, compiler, **kw: Any) -> str:
    return compiler.process(element.expanding, **kw)


@compiles(OneOf, "postgresql")
def _any_of_array(element: OneOf, compiler, **kw: Any) -> str:
    return compiler.process(element.array, **kw)


def unnest_insert(table: Table, names: Sequence[str]) -> postgresql.Insert:
    """PostgreSQL's ``INSERT INTO table (names) SELECT ... FROM unnest(...)``: the rows given at
    execution by :func:`unnest_params`, one array of the column's type per column (a JSON column's
    values as a ``text[]`` of documents, cast back per row). The columns not named take their server
    default, not their Python one: name every column with a Python default. Chain ``ON CONFLICT``
    (``.on_conflict_do_nothing(...)``) as on any PostgreSQL insert."""
    columns = [table.c[name] for name in names]
    arrays = [bindparam(column.name, type_=ARRAY(Text() if _is_json(column) else column.type)) for column in columns]
    rows = func.unnest(*arrays).table_valued(*names).render_derived()
    values = [cast(rows.c[column.name], column.type) if _is_json(column) else rows.c[column.name] for column in columns]
    return postgresql.insert(table).from_select(list(names), select(*values))


def unnest_params(table: Table, rows: Sequence[Sequence[Any]], names: Sequence[str]) -> dict[str, list[Any]]:
    """The parameters of :func:`unnest_insert` for ``rows``, each a tuple of values in ``names``
    order. ``None`` is SQL ``NULL``, except in a JSON column without ``none_as_null``, where it is
    JSON ``null`` as SQLAlchemy stores it."""
    params = dict(zip(names, ([*values] for values in zip(*rows, strict=True)), strict=True)) if rows else {name: [] for name in names}
    for name in names:
        column = table.c[name]
        if _is_json(column):
            keep_null = column.type.none_as_null
            params[name] = [None if value is None and keep_null else json.dumps(value) for value in params[name]]
    return params


def _is_json(column) -> bool:
    return isinstance(column.type, JSON)
