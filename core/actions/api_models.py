"""The bodies the action routes read and answer (``core.http.responses``): the models that
validate and serialize them are the ones ``/openapi.json`` publishes. An action's inputs and its
result are the provider's, of their own shape. An action is described by :class:`ActionOption` (the JSON of
``core.actions.service.action_json``), which the flow editor's action list uses too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from patchbay.core.http.responses import response_model


@response_model
class ActionOption:
    """A provider action an ``action`` step can call; ``inputs`` is its JSON Schema, ``output`` the
    JSON Schema of its result when the provider declares one; ``docsUrl`` the provider's page on the call."""

    id: str
    name: str
    provider: str
    displayName: str
    description: str
    docsUrl: str | None
    inputs: dict[str, Any]
    output: dict[str, Any] | None
    scopes: list[str]
    dynamicFields: list[str]


@response_model
class ProviderTrigger:
    """A provider trigger a flow can subscribe to: ``kind`` is ``webhook`` (its ``eventTypes``) or
    ``poll``; ``config`` is the JSON Schema of a subscription's configuration, ``sample`` one item."""

    name: str
    displayName: str
    kind: str
    description: str
    docsUrl: str | None
    eventTypes: list[str]
    config: dict[str, Any]
    sample: dict[str, Any]


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
    """The actions, every one; with ``?page=`` or ``?limit=``, a page of them in the page envelope
    (``page``, ``limit``, ``total``)."""

    data: list[ActionOption]
    page: int | None = None
    limit: int | None = None
    total: int | None = None


@response_model
class ActionResult:
    """What the action answered, as the provider gave it."""

    success: bool
    data: Any


@response_model
class FieldOptions:
    """The choices of a field, ``{label, value}`` as the provider's pack reads them."""

    data: list[dict[str, Any]]
