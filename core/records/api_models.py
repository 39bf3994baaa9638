"""The bodies the record routes read and answer (``core.http.responses``): the models that
validate and serialize them are the ones ``/openapi.json`` publishes. An import answers the
report of a table import (``core.tables.api_models.ImportReport``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from patchbay.core.http.responses import page_of, response_model

#: the query parameters that name the kind of the records imported (or the JSON body's fields)
KIND_QUERY: dict[str, dict[str, Any]] = {"providerType": {"type": "string"}, "resourceType": {"type": "string"}}

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class RecordsCsvDto:
    """The JSON form of a record import: the CSV text (or send it raw as ``text/csv``) and the
    kind of its records, unless the query names it."""

    csv: str
    providerType: str | None = None
    resourceType: str | None = None


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class RecordOut:
    """A provider record; ``data`` holds its fields as the provider or the CSV gave them."""

    id: str
    providerType: str
    resourceType: str
    externalId: str | None
    connectionId: str | None
    source: str
    data: dict[str, Any]
    createdAt: str | None
    updatedAt: str | None


RecordPage = page_of(RecordOut)


@response_model
class RecordGroup:
    resourceType: str
    providerType: str
    count: int


@response_model
class RecordSummary:
    """Counts by (resource type, provider), and the totals per resource type and per provider."""

    total: int
    byResourceType: dict[str, int]
    byProvider: dict[str, int]
    groups: list[RecordGroup]


@response_model
class RecordDeleted:
    deleted: bool
    id: str


@response_model
class RecordReplayed:
    """The flow executions the replay started."""

    recordId: str
    fired: int
