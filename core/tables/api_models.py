"""The bodies the table routes read and answer (``core.http.responses``): the models that validate
and serialize them are the ones ``/openapi.json`` publishes. The service checks what a schema
cannot say (a slug already taken, a value against its column's type)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field

from patchbay.core.http.responses import page_of, response_model
from patchbay.core.tables.service import MAX_KEY_LENGTH, SLUG_PATTERN

ColumnType = Literal["text", "number", "boolean", "date", "json"]
#: what the service accepts (a name is trimmed; quotes and control characters are refused)
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=r"\S")]
ColumnName = Annotated[str, Field(min_length=1, max_length=100, pattern=r'^[^\x00-\x1f"]*[^\x00-\x1f"\s][^\x00-\x1f"]*$')]
Slug = Annotated[str, Field(pattern=SLUG_PATTERN)]
ExternalKey = Annotated[str, Field(min_length=1, max_length=MAX_KEY_LENGTH)]

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class ColumnDef:
    """A column of a table's schema."""

    name: ColumnName
    type: ColumnType = "text"


@dataclass
class CreateTableDto:
    """The body of ``POST /connect/v1/tables``; ``slug`` is made from the name when left out."""

    name: Name
    slug: Slug | None = None
    description: str | None = None
    columns: list[ColumnDef] = field(default_factory=list)


@dataclass
class UpdateTableDto:
    """The body of ``PATCH /connect/v1/tables/{slug}``: ``columns`` adds or retypes the columns it
    names and keeps the others (a merge); ``removeColumns`` drops columns with their values."""

    name: Name | None = None
    slug: Slug | None = None
    description: str | None = None
    columns: list[ColumnDef] | None = None
    removeColumns: list[str] | None = None


@dataclass
class RowDto:
    """The body of a row's create, upsert or update: values by column name."""

    data: dict[str, Any] = field(default_factory=dict)
    external_key: ExternalKey | None = None


@dataclass
class UpsertRowDto:
    """The body of an upsert: the row is found by ``external_key``."""

    external_key: ExternalKey
    data: dict[str, Any] = field(default_factory=dict)


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
