"""The configuration of each built-in step type as a pydantic model: the one model that checks a
step (``checks``), writes its JSON Schema for ``/openapi.json`` (a union discriminated on ``type``)
and for ``GET /connect/v1/flows/step-types`` (the console's forms).

A step is checked on its own: the steps nested in a ``branch``, ``switch`` or ``loop`` are only
required to be a list of objects here (their schema shows the union) and are checked one by one
as the checker walks the tree, so each problem names the step it is in. Any string may be a
template (``{{ ... }}``); a field of another JSON type also takes a template string where the value
is usually computed (``status``, ``seconds``, ``items``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, model_validator

#: a value written as a template, rendered when the step runs
Template = Annotated[str, Field(pattern=r"\{\{", description="A template rendered when the step runs")]
#: what ``onError`` may say: stop the execution (the default), record the failure and go on, or
#: jump to a step of the same list
OnError = Annotated[str, Field(pattern=r"^(continue|fail|goto:.+)$", description="continue | fail | goto:<step id of the same list>")]
#: the most times one ``goto`` may be taken in one execution
MAX_GOTO_LIMIT = 100
#: items of one ``loop`` at most, and items run at once at most
MAX_LOOP_ITEMS = 10_000
MAX_LOOP_CONCURRENCY = 50


def _step_list(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(step, dict) for step in value):
        raise ValueError("must be a list of step objects")
    return value


#: nested steps: checked one by one by the walker (see the module's docstring), shown as the union
Steps = Annotated[list[dict[str, Any]], PlainValidator(_step_list, json_schema_input_type=list["FlowStep"])]


class StepBase(BaseModel):
    """What every step has. Keys a type does not name are kept (plugins and the console may add
    their own)."""

    model_config = ConfigDict(extra="allow")

    id: Annotated[str, Field(min_length=1, max_length=100, description="Unique in the flow; later steps read `steps.<id>.output`")]
    name: str | None = Field(None, description="A label for people")
    timeoutSeconds: float | None = Field(None, gt=0, le=300, description="Default 30 s")
    onError: OnError | None = Field(None, description="What a failure of this step does; default fail")
    gotoLimit: int | None = Field(None, ge=1, le=MAX_GOTO_LIMIT, description="How many times `onError: goto:` may be taken; required for a jump back")


class TransformStep(StepBase):
    """Output ``output``, rendered."""

    type: Literal["transform"]
    output: Any = Field(description="Any JSON; its strings are templates")


class FilterStep(StepBase):
    """Go on only when ``condition`` holds; otherwise end (completed) and skip the rest (inside a
    loop: skip the rest of this item)."""

    type: Literal["filter"]
    condition: Any = Field(description="A template, or a bare expression such as `trigger.amount > 10`")


class HttpStep(StepBase):
    """Send an HTTP request; a non-2xx answer fails the step."""

    type: Literal["http"]
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] | Template = "GET"
    url: Annotated[str, Field(min_length=1)]
    headers: dict[str, Any] | None = None
    body: Any = None


class ActionStep(StepBase):
    """Run a provider action through a connection of the workspace."""

    type: Literal["action"]
    provider: str | None = None
    action: Annotated[str, Field(min_length=1, description="`name` or `provider.name`")]
    connectionId: Annotated[str, Field(min_length=1)]
    inputs: dict[str, Any] | Template | None = None


class TableUpsertStep(StepBase):
    """Insert or update a row of a table, matched on ``externalKey``."""

    type: Literal["table.upsert"]
    table: Annotated[str, Field(min_length=1)]
    externalKey: Any = None
    data: dict[str, Any] | Template = Field(default_factory=dict)


class TableLookupStep(StepBase):
    """The most recently updated row of ``table`` whose ``column`` equals ``value``, or null."""

    type: Literal["table.lookup"]
    table: Annotated[str, Field(min_length=1)]
    column: Annotated[str, Field(min_length=1)]
    value: Any = None


class DelayStep(StepBase):
    """Wait ``seconds`` (up to 30 s inline, longer ones park the execution)."""

    type: Literal["delay"]
    seconds: Annotated[float, Field(ge=0)] | Template


class WaitStep(StepBase):
    """Wait ``seconds``, or until the time ``until`` (ISO 8601 with an offset): the execution is
    stored ``waiting`` and a job due then resumes it, in whatever process runs jobs by then. Output
    ``{seconds, resumeAt, waited}``."""

    type: Literal["wait"]
    seconds: Annotated[float, Field(ge=0, le=366 * 86400)] | Template | None = None
    until: str | None = Field(None, description="An ISO 8601 time with an offset, or a template giving one")

    @model_validator(mode="after")
    def _one_of(self) -> WaitStep:
        if (self.seconds is None) == (self.until is None):
            raise ValueError("give either 'seconds' or 'until'")
        return self


class ApprovalStep(StepBase):
    """Wait until an approver of the workspace answers (through the API, the console or a signed
    link emailed to each of ``approvers``) or ``expiresInSeconds`` pass, then run the steps of
    ``approved``, ``denied`` or ``timeout``. Output ``{decision, approvalId, decidedBy, note, output}``."""

    type: Literal["approval"]
    message: str | None = Field(None, description="What the approvers are asked")
    approvers: list[Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+$")]] = Field(default_factory=list, description="Emails sent the signed links")
    expiresInSeconds: Annotated[float, Field(gt=0, le=30 * 86400)] | None = Field(None, description="Default one day")
    approved: Steps = Field(default_factory=list)
    denied: Steps = Field(default_factory=list)
    timeout: Steps = Field(default_factory=list)


class BranchPath(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=100)]
    condition: Any = Field(description="A template, or a bare expression such as `trigger.amount > 100`")
    steps: Steps = Field(default_factory=list)


class BranchStep(StepBase):
    """Run the steps of the first path whose condition holds, else ``default``; the steps of the
    other paths are recorded ``skipped``. Output ``{path, output}`` (the last output of the path)."""

    type: Literal["branch"]
    paths: Annotated[list[BranchPath], Field(min_length=1)]
    default: Steps = Field(default_factory=list)


class SwitchStep(StepBase):
    """Run the steps of the case named by ``value`` (compared as text), else ``default``. Output
    ``{value, path, output}``."""

    type: Literal["switch"]
    value: Any = Field(description="Usually a template, such as `{{ trigger.type }}`")
    cases: Annotated[dict[str, Steps], Field(min_length=1)]
    default: Steps = Field(default_factory=list)


class LoopStep(StepBase):
    """Run ``steps`` once per item of ``items`` (``loop.item``, ``loop.index`` in templates), at most
    ``concurrency`` items at once. Output ``{count, completed, failed, skipped, results: [{index,
    status, output, error}]}``; a failed item fails the loop after the items running end."""

    type: Literal["loop"]
    items: list[Any] | Template
    concurrency: int = Field(1, ge=1, le=MAX_LOOP_CONCURRENCY)
    steps: Annotated[Steps, Field(min_length=1)]


class CallFlowStep(StepBase):
    """Run the published version of another flow of the workspace with ``input`` as its trigger
    payload; output ``{executionId, status, output}`` (its ``respond`` body, else its last output)."""

    type: Literal["call_flow"]
    flowId: Annotated[str, Field(min_length=1)]
    input: Any = Field(default_factory=dict)


class RespondStep(StepBase):
    """The answer of a synchronous run (``POST /flows/{id}/invoke``, a ``call_flow``): the first
    ``respond`` of an execution wins; the steps after it still run."""

    type: Literal["respond"]
    status: Annotated[int, Field(ge=200, le=499)] | Template = 200
    headers: dict[str, str] | None = None
    body: Any = None


#: every built-in step type's model, in the order the documentation lists them
STEP_MODELS: tuple[type[StepBase], ...] = (
    TransformStep,
    FilterStep,
    HttpStep,
    ActionStep,
    TableUpsertStep,
    TableLookupStep,
    DelayStep,
    WaitStep,
    ApprovalStep,
    BranchStep,
    SwitchStep,
    LoopStep,
    CallFlowStep,
    RespondStep,
)

MODELS: dict[str, type[StepBase]] = {
    model.model_fields["type"].annotation.__args__[0]: model  # type: ignore[union-attr]
    for model in STEP_MODELS
}

FlowStep = Annotated[Union[STEP_MODELS], Field(discriminator="type")]  # noqa: UP007 - a discriminated union wants the Union form here

for _model in (BranchPath, *MODELS.values()):
    _model.model_rebuild()


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of one step type as one document: the type's own schema at the top, what it
    refers to in ``$defs`` (a recursive type's schema is only a ``$ref`` to itself otherwise)."""
    schema = model.model_json_schema()
    top = schema.pop("$ref", None)
    if top is None:
        return schema
    defs = schema.get("$defs", {})
    return {**defs[top.rsplit("/", 1)[-1]], "$defs": defs}
