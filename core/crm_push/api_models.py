"""The bodies the CRM push routes read and answer (``core.http.responses``): the models that
validate and serialize them are the ones ``/openapi.json`` publishes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NotRequired

from typing_extensions import TypedDict

from patchbay.core.http.responses import response_model
from patchbay.core.leads.api_models import CrmSyncStatus

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class PushBatchDto:
    """The optional body of ``POST /crm/push-batch/{accountId}``: the leads ``leadIds``, or else
    the leads in one of ``crmSyncStatus`` (default none, pending and failed; one status may be
    given as a string)."""

    leadIds: list[str] | None = None
    crmSyncStatus: list[CrmSyncStatus] | None = None


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class BatchQueued:
    """``leads`` leads considered, ``queued`` pushes queued."""

    accountId: str
    leads: int
    queued: int


@response_model
class DestinationTest(TypedDict):
    """One CRM destination's answer; ``detail``, present when the destination reported more than
    success, is of the destination's own shape."""

    connectionId: str
    provider: str
    ok: bool
    error: str | None
    detail: NotRequired[Any]


@response_model
class DestinationsTested:
    """``ok`` when there is a destination and every one accepted its credentials."""

    accountId: str
    ok: bool
    destinations: list[DestinationTest]
