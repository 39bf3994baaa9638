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
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ARRAY, Boolean, all_, any_, bindparam
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
