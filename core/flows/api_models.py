"""The bodies the flow routes read and answer (spec 2.4 to 2.10, 4.8 to 4.12; contract sections 6
and 8): the models that validate and serialize them are the ones ``/openapi.json`` publishes
(``core.http.responses``). What a schema cannot say (a step type a plugin adds, a cron expression,
a connection of the right provider) the routes and the engine check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from aiohttp import web
from pydantic import ConfigDict, Field, PlainValidator, with_config

from patchbay.core.actions.api_models import ActionOption
from patchbay.core.flows.step_schemas import FlowStep
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


def _step_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("a step must be an object")
    return value


#: A step: its JSON Schema is the union of the built-in step types discriminated on ``type``
#: (``step_schemas``). The body accepts any object here: a step missing configuration is saved and
#: listed among the flow's ``problems`` (the same models check it), and publish refuses it; the
#: engine refuses an unknown type or a step without an ``id``. Plugin types, outside the union, are
#: listed with their schemas by ``GET /connect/v1/flows/step-types``.
Step = Annotated[dict[str, Any], PlainValidator(_step_object, json_schema_input_type=FlowStep)]


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
class FlowSettingsDto:
    """The body of ``PUT /connect/v1/flows/settings``: the keys given are set, ``null`` clears one."""

    errorFlowId: Annotated[str, Field(min_length=1, max_length=36)] | None = None
    maxConcurrentExecutions: Annotated[int, Field(ge=1, le=1000)] | None = None


@response_model
class FlowSettingsOut:
    """The workspace's flow settings: the error flow every failed execution starts, and how many
    queued executions run at once (null: no limit)."""

    errorFlowId: str | None
    maxConcurrentExecutions: int | None


@dataclass
class ApprovalDecisionDto:
    """An approver's answer to a flow approval."""

    decision: Literal["approved", "denied"]
    note: Annotated[str, Field(max_length=2000)] | None = None


@dataclass
class SignedDecisionDto:
    """The answer a signed approval link carries (its ``token``)."""

    token: Annotated[str, Field(min_length=1, max_length=500)]


@response_model
class FlowApprovalOut:
    """An approval an ``approval`` step waits for: pending, approved, denied or timeout."""

    id: str
    flowId: str
    executionId: str
    stepId: str
    status: Literal["pending", "approved", "denied", "timeout"]
    message: str | None
    expiresAt: Timestamp
    decidedBy: str | None
    decidedAt: Timestamp
    note: str | None
    createdAt: Timestamp


FlowApprovalPage = page_of(FlowApprovalOut)


@dataclass
class RetryDto:
    """The body of ``POST .../executions/{executionId}/retry``: the step to run from (default: the
    first that failed) and the steps to run: those the failed execution ran (``original``) or the
    flow's published version now (``current``, the default)."""

    fromStep: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    version: Literal["current", "original"] = "current"


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
class ProblemOut:
    """Why a flow's steps are not fit to run: the step, the field (dotted, empty for the step as a
    whole) and the reason."""

    stepId: str
    field: str
    message: str


@response_model
class CheckedFlow(FlowOut):
    """A flow with the problems of its current steps (none: it can be published)."""

    problems: list[ProblemOut]


@response_model
class StepTypeOut:
    """A step type: ``schema`` is the JSON Schema of a step of this type (a form's fields);
    ``control`` types hold steps; ``sideEffects`` types are checkpointed as they finish."""

    type: str
    title: str
    description: str
    control: bool
    sideEffects: bool
    schema: dict[str, Any]


@response_model
class InvokeOut:
    """What ``invoke`` answers when no ``respond`` step ran: the execution, ended."""

    executionId: str
    status: Literal["completed", "failed"]
    error: str | None


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
    """An execution (spec 2.10): status pending, running, waiting (until ``resumeAt``: a ``wait``
    step or an approval), completed or failed."""

    id: str
    flowId: str
    version: int | None
    status: Literal["pending", "running", "waiting", "completed", "failed"]
    triggerSource: str
    triggerPayload: Any
    error: str | None
    startedAt: Timestamp
    finishedAt: Timestamp
    durationMs: int | None
    replayOf: str | None
    createdAt: Timestamp
    resumeAt: Timestamp


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
