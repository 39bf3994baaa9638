"""The bodies the flow routes read and answer (spec 2.4 to 2.10, 4.8 to 4.12; contract sections 6
and 8): the models that validate and serialize them are the ones ``/openapi.json`` publishes
(``core.http.responses``). What a schema cannot say (a step type a plugin adds, a cron expression,
a connection of the right provider) the routes and the engine check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from aiohttp import web
from pydantic import ConfigDict, Field, with_config

from patchbay.core.actions.api_models import ActionOption
from patchbay.core.http.bodies import named_values, read_object, structure
from patchbay.core.http.responses import page_of, response_model

#: a flow's or a template's name (trimmed, never blank)
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=r"\S")]
Description = Annotated[str, Field(max_length=5000)]
#: ISO 8601 UTC with milliseconds and ``Z`` (contract section 4), or null before it happens
Timestamp = str | None

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


async def read_checked(request: web.Request, model: type, *, optional: bool = False) -> dict[str, Any]:
    """The body validated as ``model`` (400 naming the field), answered as the validated values of
    only the keys it names, since an update changes only those. ``optional``: no body at all is
    ``{}``."""
    if optional and not (await request.read()).strip():
        return {}
    body = await read_object(request)
    return named_values(structure(body, model), body)


@with_config(ConfigDict(extra="allow"))
@dataclass
class Step:
    """A step ``{id, type, ...}``: the other keys are the step type's (contract section 6:
    ``transform`` {output}, ``filter`` {condition}, ``http`` {method, url, headers?, body?},
    ``action`` {provider, action, connectionId, inputs}, ``table.upsert``, ``table.lookup``,
    ``delay`` {seconds}; plugins add types, listed by ``GET /connect/v1/flows/action-options``)."""

    id: Annotated[str, Field(min_length=1, max_length=100)]
    type: Annotated[str, Field(min_length=1)]


@dataclass
class CreateFlowDto:
    """The body of ``POST /connect/v1/flows``: a draft flow."""

    name: Name
    description: Description | None = None
    steps: list[Step] = field(default_factory=list)
    trigger: dict[str, Any] | None = None


@dataclass
class UpdateFlowDto:
    """The body of ``PATCH /connect/v1/flows/{flowId}``: any of the create fields; the ones given
    replace the flow's, and a published flow becomes a draft (its published version keeps running)."""

    name: Name | None = None
    description: Description | None = None
    steps: list[Step] | None = None
    trigger: dict[str, Any] | None = None


@dataclass
class ToggleDto:
    """The optional body of the toggle: ``isActive`` sets the state, without it the state flips."""

    isActive: bool | None = None


@with_config(ConfigDict(extra="allow"))
@dataclass
class TriggerPayload:
    """The trigger payload a test runs the flow with (any JSON object; steps read it as ``trigger``)."""


@dataclass
class CreateScheduleDto:
    """The body of ``POST /connect/v1/flows/{flowId}/schedules`` (contract section 8): a cron
    expression of five fields, read in ``timezone`` (an IANA name)."""

    cron: Annotated[str, Field(min_length=1, max_length=100)]
    timezone: Annotated[str, Field(min_length=1, max_length=64)] | None = "UTC"
    payload: dict[str, Any] | None = None
    isActive: bool | None = True


@dataclass
class UpdateScheduleDto:
    """The body of ``PATCH .../schedules/{scheduleId}``: any of the create fields."""

    cron: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    timezone: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    payload: dict[str, Any] | None = None
    isActive: bool | None = None


@dataclass
class CreateTriggerDto:
    """The body of ``POST /connect/v1/flows/{flowId}/triggers`` (spec 2.7): ``triggerName`` is one
    of the provider's triggers (``GET /connect/v1/flows/trigger-options``); ``kind`` defaults to
    the trigger's; a poll trigger needs ``connectionId``."""

    providerType: Annotated[str, Field(min_length=1)]
    triggerName: Annotated[str, Field(min_length=1)]
    kind: Literal["webhook", "poll"] | None = None
    connectionId: str | None = None
    config: dict[str, Any] | None = None


@dataclass
class CloneTemplateDto:
    """The optional body of a clone (spec 2.6): the trigger's connection (else the workspace's
    connection to the trigger's provider) and a new name."""

    triggerConnectionId: str | None = None
    name: Name | None = None


@dataclass
class PublishTemplateDto:
    """The optional body of ``publish-as-template``: ``public`` asks for a review."""

    visibility: Literal["private", "public", "pending_review"] = "private"
    category: Annotated[str, Field(min_length=1)] = "custom"


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class FlowOut:
    """A flow (spec 2.4): ``version`` counts publishes and reverts, ``publishedVersion`` is the one
    live triggers run."""

    id: str
    name: str
    description: str | None
    status: Literal["draft", "published", "archived"]
    version: int
    publishedVersion: int | None
    published_at: Timestamp
    isActive: bool
    trigger: dict[str, Any] | None
    steps: list[dict[str, Any]]
    templateSlug: str | None
    archivedAt: Timestamp
    createdAt: Timestamp
    updatedAt: Timestamp


FlowPage = page_of(FlowOut)


@response_model
class Published:
    """What publish and revert answer (spec 4.8)."""

    id: str
    version: int
    status: str
    published_at: Timestamp


@response_model
class FlowVersionOut:
    """A version of a flow (spec 2.5): ``action`` is publish or revert."""

    version: int
    published_at: Timestamp
    action: str
    revertedFrom: int | None


@response_model
class FlowVersionWithSteps(FlowVersionOut):
    """A version with its snapshot of the steps (``?steps=true``)."""

    steps: list[dict[str, Any]]


@response_model
class FlowDeleted:
    success: bool
    id: str


@response_model
class Done:
    success: bool


@response_model
class ExecutionOut:
    """An execution (spec 2.10): status pending, running, completed or failed."""

    id: str
    flowId: str
    version: int | None
    status: Literal["pending", "running", "completed", "failed"]
    triggerSource: str
    triggerPayload: Any
    error: str | None
    startedAt: Timestamp
    finishedAt: Timestamp
    durationMs: int | None
    replayOf: str | None
    createdAt: Timestamp


ExecutionPage = page_of(ExecutionOut)


@response_model
class StepOut:
    """One step of an execution: its rendered input, its output and, on failure, the error."""

    id: str
    stepId: str
    position: int
    type: str
    status: str
    input: Any
    output: Any
    error: str | None
    startedAt: Timestamp
    finishedAt: Timestamp
    durationMs: int | None


@response_model
class ExecutionWithSteps(ExecutionOut):
    steps: list[StepOut]


@response_model
class ScheduleOut:
    id: str
    flowId: str
    cron: str
    timezone: str
    payload: dict[str, Any]
    isActive: bool
    nextRunAt: Timestamp
    lastRunAt: Timestamp
    createdAt: Timestamp
    updatedAt: Timestamp


@response_model
class TriggerSubscriptionOut:
    id: str
    subscriptionId: str
    flowId: str
    providerType: str
    triggerName: str
    kind: str
    connectionId: str | None
    config: dict[str, Any]
    isActive: bool
    cursor: Any
    lastPolledAt: Timestamp
    lastError: str | None
    createdAt: Timestamp


@response_model
class TemplateSummary:
    """A template in the list (spec 2.6)."""

    slug: str
    name: str
    description: str | None
    category: str
    trigger: dict[str, Any] | None
    stepCount: int
    providers: list[str]
    cloneCount: int
    visibility: str
    isSystem: bool
    createdAt: Timestamp


@response_model
class TemplateOut(TemplateSummary):
    """One template with its steps."""

    steps: list[dict[str, Any]]


@response_model
class TriggerOption:
    name: str
    displayName: str
    kind: str
    description: str
    eventTypes: list[str]
    config: dict[str, Any]
    sample: dict[str, Any]


@response_model
class ProviderTriggers:
    """A provider and the triggers a flow can subscribe to."""

    providerType: str
    displayName: str
    triggers: list[TriggerOption]


@response_model
class ProviderActions:
    providerType: str
    displayName: str
    actions: list[ActionOption]


@response_model
class ActionOptions:
    """The step types a flow may use and the provider actions an ``action`` step can call."""

    stepTypes: list[str]
    providers: list[ProviderActions]
