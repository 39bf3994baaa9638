"""The bodies the alert routes read and answer (spec 2.9, 4.11): the models that validate and
serialize them are the ones ``/openapi.json`` publishes (``core.http.responses``). The channel (a
plugin may add one) and the target each channel takes the routes check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from aiohttp import web
from pydantic import Field

from patchbay.core.alerts.models import EVENT_TYPES
from patchbay.core.http.bodies import read_body
from patchbay.core.http.responses import response_model

#: flow.failed, flow.succeeded (spec 6.1) and the operator events (``operator_events``)
AlertEventType = Literal[EVENT_TYPES]  # type: ignore[valid-type]
AlertEventTypes = Annotated[list[AlertEventType], Field(min_length=1)]

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class CreateAlertDto:
    """The body of ``POST /connect/v1/alerts`` (spec 2.9): ``channel`` is email, webhook, chat or
    one a plugin adds; ``target`` an email address (email) or an HTTPS URL (the others);
    ``eventTypes`` left out or null is ``["flow.failed"]``."""

    channel: Annotated[str, Field(min_length=1)]
    target: Annotated[str, Field(min_length=1)]
    eventTypes: AlertEventTypes | None = None
    isActive: bool = True


@dataclass
class UpdateAlertDto:
    """The body of ``PATCH /connect/v1/alerts/{subscriptionId}``: the fields given change, a field
    left out or null stays."""

    isActive: bool | None = None
    target: Annotated[str, Field(min_length=1)] | None = None
    eventTypes: AlertEventTypes | None = None


async def read_alert(request: web.Request, model: type[CreateAlertDto] | type[UpdateAlertDto]) -> CreateAlertDto | UpdateAlertDto:
    """The body as ``model``, 400 naming a field of the wrong type or outside its constraints."""
    return await read_body(request, model)


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class AlertOut:
    """An alert subscription (``id`` and ``subscriptionId`` are the same)."""

    id: str
    subscriptionId: str
    channel: str
    target: str
    eventTypes: list[str]
    isActive: bool
    createdAt: str | None
    updatedAt: str | None


@response_model
class AlertDeleted:
    success: bool
