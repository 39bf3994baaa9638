"""The bodies the table routes read and answer (``core.http.responses``): the models that validate
and serialize them are the ones ``/openapi.json`` publishes. The service checks what a schema
cannot say (a slug already taken, a value against its column's type)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from patchbay.core.http.responses import page_of, response_model

ColumnType = Literal["text", "number", "boolean", "date", "json"]

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class ColumnDef:
    """A column of a table's schema."""

    name: str
    type: ColumnType = "text"


@dataclass
class CreateTableDto:
    """The body of ``POST /connect/v1/tables``; ``slug`` is made from the name when left out."""

    name: str
    slug: str | None = None
    description: str | None = None
    columns: list[ColumnDef] = field(default_factory=list)


@dataclass
class UpdateTableDto:
    """The body of ``PATCH /connect/v1/tables/{slug}``: ``columns`` adds or retypes the columns it
    names and keeps the others (a merge); ``removeColumns`` drops columns with their values."""

    name: str | None = None
    slug: str | None = None
    description: str | None = None
    columns: list[ColumnDef] | None = None
    removeColumns: list[str] | None = None


@dataclass
class RowDto:
    """The body of a row's create, upsert or update: values by column name."""

    data: dict[str, Any] = field(default_factory=dict)
    external_key: str | None = None


@dataclass
class CsvDto:
    """The JSON form of an import: the CSV text (or send it raw as ``text/csv``)."""

    csv: str


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class Column:
    name: str
    type: str


@response_model
class TableOut:
    """A table with its schema and row count."""

    id: str
    name: str
    slug: str
    description: str | None
    columns: list[Column]
    createdAt: str | None
    updatedAt: str | None
    rowCount: int | None = None


@response_model
class RowOut:
    id: str
    tableId: str
    external_key: str | None
    data: dict[str, Any]
    createdAt: str | None
    updatedAt: str | None


RowPage = page_of(RowOut)


@response_model
class UpsertedRow(RowOut):
    """The row after an upsert; ``created`` says whether it is new."""

    created: bool = False


@response_model
class TableDeleted:
    deleted: bool
    slug: str


@response_model
class RowDeleted:
    deleted: bool
    id: str


@response_model
class ImportLineError:
    line: int
    message: str


@response_model
class ImportReport:
    """What an import did: rows created, updated and rejected (the first rejections with their line)."""

    created: int
    updated: int
    rejected: int
    total: int
    errors: list[ImportLineError]
