"""The bodies the data deletion routes answer (``core.http.responses``): the models that serialize
them are the ones ``/openapi.json`` publishes. ``confirmation_code`` keeps Meta's spelling: Meta
reads that answer to its data deletion callback."""

from __future__ import annotations

from typing import Literal

from patchbay.core.http.responses import response_model


@response_model
class DeletionCallbackField:
    """A provider's data deletion callback: the form or JSON field it reads."""

    source: str
    field: str


@response_model
class DeletionInformation:
    """How to request the deletion of one's data."""

    description: str
    callbackUrl: str
    statusUrl: str
    callbacks: list[DeletionCallbackField]


@response_model
class DeletionRequested:
    """Where to follow the deletion, and its code."""

    url: str
    confirmation_code: str


@response_model
class DeletionStatus:
    confirmationCode: str
    status: Literal["pending", "completed", "failed"]
    requestedAt: str | None
    completedAt: str | None
