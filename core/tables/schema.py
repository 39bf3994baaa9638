"""The column schema of a table: the five types, and values checked (and converted) on write.

Every error names the column: ``Column 'age' expects a number``. JSON writes are strict about
types but accept the string forms a template or a CSV cell produces (``"42"`` for a number,
``"true"`` for a boolean); CSV cells are always strings, and an empty cell is null.
"""

from __future__ import annotations

import json
import math
import re
from datetime import date, datetime
from typing import Any

from patchbay.core.errors import Invalid

COLUMN_TYPES = ("text", "number", "boolean", "date", "json")
#: names that mean the row itself in CSV files and lookups, never a data column
RESERVED = ("id", "external_key")
_NAME = re.compile(r'^[^\x00-\x1f"]{1,100}$')  # no quote: names go into JSON paths


def is_column_name(name: str) -> bool:
    """Whether ``name`` can name a column (1 to 100 characters, no quote or control character)."""
    return bool(_NAME.match(name))


_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}


class ValueRejected(ValueError):
    """A value does not fit its column; the message names the column."""


def validate_columns(columns: Any) -> list[dict[str, str]]:
    """The schema of a create or update body, checked: 400 naming the bad column."""
    if not isinstance(columns, list):
        raise Invalid("Validation failed: 'columns' must be a list of {name, type}")
    seen: set[str] = set()
    result = []
    for index, column in enumerate(columns):
        if not isinstance(column, dict) or not isinstance(column.get("name"), str):
            raise Invalid(f"Validation failed: columns[{index}] needs a 'name' string")
        name = column["name"].strip()
        kind = column.get("type", "text")
        if not name or not is_column_name(name):
            raise Invalid(f"Validation failed: columns[{index}] has an invalid name")
        if name in RESERVED:
            raise Invalid(f"Validation failed: column name '{name}' is reserved")
        if name in seen:
            raise Invalid(f"Validation failed: column '{name}' is defined twice")
        if kind not in COLUMN_TYPES:
            raise Invalid(f"Validation failed: column '{name}' has unknown type {kind!r}; one of {', '.join(COLUMN_TYPES)}")
        seen.add(name)
        result.append({"name": name, "type": kind})
    return result


def _number(name: str, value: Any) -> int | float:
    if isinstance(value, bool):
        raise ValueRejected(f"Column '{name}' expects a number")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueRejected(f"Column '{name}' expects a finite number")
        return value
    if isinstance(value, str):
        raw = value.strip()
        try:
            return int(raw)
        except ValueError:
            try:
                number = float(raw)
            except ValueError:
                raise ValueRejected(f"Column '{name}' expects a number, got {value!r}") from None
            if not math.isfinite(number):
                raise ValueRejected(f"Column '{name}' expects a finite number") from None
            return number
    raise ValueRejected(f"Column '{name}' expects a number")


def _boolean(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueRejected(f"Column '{name}' expects a boolean, got {value!r}")


def _date(name: str, value: Any) -> str:
    """ISO 8601 dates and date-times, kept as the text given (``Z`` accepted)."""
    if isinstance(value, str):
        raw = value.strip()
        try:
            if len(raw) == 10:
                date.fromisoformat(raw)
            else:
                datetime.fromisoformat(raw.replace("Z", "+00:00"))
            return raw
        except ValueError:
            pass
    raise ValueRejected(f"Column '{name}' expects an ISO 8601 date, got {value!r}")


def _text(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise ValueRejected(f"Column '{name}' expects text")


def coerce(name: str, kind: str, value: Any) -> Any:
    """``value`` converted for a column of type ``kind``; null stays null."""
    if value is None:
        return None
    if kind == "text":
        return _text(name, value)
    if kind == "number":
        return _number(name, value)
    if kind == "boolean":
        return _boolean(name, value)
    if kind == "date":
        return _date(name, value)
    return value  # json: any JSON value


def coerce_cell(name: str, kind: str, cell: str) -> Any:
    """A CSV cell converted for its column; an empty cell is null; json cells are JSON text."""
    if cell == "":
        return None
    if kind == "json":
        try:
            return json.loads(cell)
        except json.JSONDecodeError:
            raise ValueRejected(f"Column '{name}' expects JSON") from None
    return coerce(name, kind, cell)


class Schema:
    """A table's columns by name; schemaless (no columns) accepts any keys as they are."""

    def __init__(self, columns: list[dict[str, str]]) -> None:
        self.columns = columns
        self.types = {column["name"]: column["type"] for column in columns}

    @property
    def strict(self) -> bool:
        return bool(self.types)

    def check(self, data: Any) -> dict[str, Any]:
        """``data`` with every value converted; raises :class:`ValueRejected` naming the column."""
        if not isinstance(data, dict):
            raise ValueRejected("'data' must be an object")
        if not self.strict:
            return dict(data)
        result = {}
        for key, value in data.items():
            kind = self.types.get(key)
            if kind is None:
                raise ValueRejected(f"Unknown column '{key}'")
            result[key] = coerce(key, kind, value)
        return result

    def cell(self, name: str, cell: str) -> Any:
        kind = self.types.get(name)
        if kind is None:
            if self.strict:
                raise ValueRejected(f"Unknown column '{name}'")
            return cell
        return coerce_cell(name, kind, cell)
