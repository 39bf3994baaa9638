"""The bodies the lead routes read and answer (``core.http.responses``): the models that validate
and serialize them are the ones ``/openapi.json`` publishes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from patchbay.core.http.responses import page_of, response_model
from patchbay.core.leads.models import CRM_SYNC_STATUSES, IMPORT_STATUSES

CrmSyncStatus = Literal[CRM_SYNC_STATUSES]  # type: ignore[valid-type]

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class StartImportDto:
    """The optional body of ``POST /leads/import/{accountId}``: import only this connection, or
    only the connections of this provider."""

    connectionId: str | None = None
    provider: str | None = None


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class LeadOut:
    """A cleaned lead; ``customFields`` holds the form's other answers as the provider sent them."""

    id: str
    accountId: str
    provider: str
    connectionId: str | None
    eventId: str | None
    externalId: str | None
    formId: str | None
    source: str
    email: str | None
    phone: str | None
    firstName: str | None
    lastName: str | None
    fullName: str | None
    customFields: dict[str, Any]
    crmSyncStatus: CrmSyncStatus
    capturedAt: str | None
    createdAt: str | None


LeadPage = page_of(LeadOut)


@response_model
class LeadSyncOut:
    """The lead's push to one CRM destination."""

    connectionId: str
    provider: str
    status: str
    externalId: str | None
    attempts: int
    error: str | None
    lastAttemptAt: str | None


@response_model
class LeadDetail(LeadOut):
    """A lead with its CRM syncs."""

    crmSyncs: list[LeadSyncOut]


@response_model
class LeadImportOut:
    """One import of a connection's leads."""

    id: str
    accountId: str
    provider: str
    connectionId: str
    status: Literal[IMPORT_STATUSES]  # type: ignore[valid-type]
    pages: int
    imported: int
    duplicates: int
    error: str | None
    startedAt: str | None
    updatedAt: str | None
    finishedAt: str | None


@response_model
class ImportsStarted:
    """The imports started (or already running) for the account's connections."""

    accountId: str
    imports: list[LeadImportOut]


@response_model
class ImportStatus:
    """The latest import of each connection, their overall status and totals."""

    accountId: str
    status: Literal["none", "running", "failed", "completed"]
    imports: list[LeadImportOut]
    imported: int
    duplicates: int


@response_model
class PushQueued:
    """A lead's push queued to ``queued`` CRM destinations."""

    leadId: str
    queued: int
    crmSyncStatus: CrmSyncStatus
