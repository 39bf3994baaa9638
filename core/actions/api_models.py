"""The bodies the action routes read and answer (``core.http.responses``): the models that
validate and serialize them are the ones ``/openapi.json`` publishes. An action's inputs and its
result are the provider's, of their own shape. An action is described as the flow editor lists it
(``core.flows.api_models.ActionOption``, the JSON of ``core.actions.service.action_json``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from patchbay.core.flows.api_models import ActionOption as ActionOut
from patchbay.core.http.responses import response_model

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class ProviderActionDto:
    """The body of ``POST /connect/v1/providers/{providerType}/actions/{actionName}``: the inputs
    themselves, or ``{connectionId, inputs}``; ``connectionId`` may sit beside the inputs too."""

    connectionId: str | None = None
    inputs: dict[str, Any] | None = None


@dataclass
class ExecuteDto:
    """The body of ``POST /api/execute``; ``action`` may be qualified (``hubspot.create_contact``)."""

    connectionId: str
    action: str
    inputs: dict[str, Any] | None = None


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class CatalogEntry:
    """A provider with at least one action: its metadata, and its actions' names."""

    providerType: str
    name: str
    displayName: str
    category: str
    authMode: str
    actionCount: int
    actions: list[str]


@response_model
class ActionList:
    data: list[ActionOut]


@response_model
class ActionResult:
    """What the action answered, as the provider gave it."""

    success: bool
    data: Any


@response_model
class FieldOptions:
    """The choices of a field, ``{label, value}`` as the provider's pack reads them."""

    data: list[dict[str, Any]]
