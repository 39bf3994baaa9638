"""Flows in the console: the list; a flow's steps as a chain, each with its configuration, shown
from their JSON whatever their type; versions with a diff of two; publish, revert, toggle and
archive; executions filtered by status and time, paged by keyset; an execution with every step's
input, output, error and duration; replay with the original payload. Every write calls the flows
service the API calls."""

from __future__ import annotations

import difflib
import json
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from aiohttp import web
from jinja2.utils import htmlsafe_json_dumps

from patchbay.core.actions.service import all_actions
from patchbay.core.connections.service import connection_page
from patchbay.core.console.form_models import CsrfOnlyForm
from patchbay.core.console.pages import NAV_ORDER, NavItem, View, action, page, render, see_other
from patchbay.core.console.routes_flow_approvals import waiting_on
from patchbay.core.console.service import PREFIX
from patchbay.core.errors import Invalid
from patchbay.core.flows import executions, service
from patchbay.core.flows.checks import Problem
from patchbay.core.flows.models import EXECUTION_STATUSES, FLOW_STATUSES, Flow
from patchbay.core.flows.routes_flows import trigger_options
from patchbay.core.flows.step_types import step_types
from patchbay.core.http.openapi import form_model
from patchbay.core.http.responses import HTML, returns
from patchbay.core.timeutil import utcnow

routes = web.RouteTableDef()
NAV = NavItem("Flows", "flows", NAV_ORDER["Flows"])
BASE = PREFIX + "/w/{workspace_id}/flows"
PAGE_SIZE = 50
#: the time filter of the executions: its values and how far back each looks
RANGES = {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}


@form_model
class RevertForm:
    """Revert a flow to one of its versions."""

    csrf: str
    """The session's CSRF token."""
    version: str
    """The version whose steps become the flow's again (published as a new version)."""


@form_model
class FlowEditForm:
    """A flow as the editor sends it: its name, description, and its trigger and steps as one JSON
    document (which the editor's forms write; without JavaScript it is edited as it is)."""

    csrf: str
    """The session's CSRF token."""
    name: str = ""
    """The flow's name."""
    document: str = "{}"
    """``{"trigger": {...} | null, "steps": [...]}`` as JSON."""
    description: str | None = None
    """What the flow is for."""
    payload: str | None = None
    """The sample trigger payload (JSON) a test runs the flow with."""
    intent: Literal["save", "test"] = "save"
    """``save`` the draft, or save it and ``test`` it with ``payload``."""
    run: str | None = None
    """The test run the editor shows (kept in view after a save, to retry from its failed step)."""


@form_model
class RetryForm:
    """Retry a failed execution from one of its steps."""

    csrf: str
    """The session's CSRF token."""
    fromStep: str | None = None  # noqa: N815 (the form's field name)
    """The step to run again from (empty: the first that failed); the steps before it that completed are reused."""
    version: Literal["current", "original"] = "current"
    """``current``: the flow's published version (its draft when never published); ``original``: the steps the execution ran."""


def pretty(value: Any) -> str:
    """JSON as people read it (keys sorted, indented)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def step_config(step: Any) -> str:
    """A step's configuration: every field but its id and type, whatever the step type."""
    if isinstance(step, dict):
        return pretty({key: value for key, value in step.items() if key not in ("id", "type")})
    return pretty(step)


def steps_diff(old: list[Any], new: list[Any], old_name: str, new_name: str) -> list[tuple[str, str]]:
    """The unified diff of two step lists as pretty JSON: ``(kind, line)`` with kind ``add``,
    ``del``, ``hunk`` or ``same``."""
    lines = difflib.unified_diff(pretty(old).splitlines(), pretty(new).splitlines(), old_name, new_name, lineterm="", n=3)
    kinds = []
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        kind = "hunk" if line.startswith("@@") else "add" if line.startswith("+") else "del" if line.startswith("-") else "same"
        kinds.append((kind, line))
    return kinds


# -- flows ----------------------------------------------------------------------------------------


@routes.get(BASE)
@page()
async def flows_page(request: web.Request, view: View) -> web.Response:
    """The workspace's flows, newest first (``?status=`` filters)."""
    status = request.query.get("status") or None
    if status is not None and status not in FLOW_STATUSES:
        raise Invalid(f"status must be one of {', '.join(FLOW_STATUSES)}")
    number = _page_number(request)
    rows, total = await service.flow_page(view.services, workspace_id=view.workspace_id, status=status, page=number, limit=PAGE_SIZE)
    context = {"flows": rows, "total": total, "status": status, "statuses": FLOW_STATUSES, "number": number, "more": number * PAGE_SIZE < total}
    return render(request, "console/flows.html", context, view=view, current="flows")


def _page_number(request: web.Request) -> int:
    value = request.query.get("page", "1")
    if not value.isdigit() or not 0 < int(value) <= 100_000:
        raise Invalid("page must be a whole number from 1")
    return int(value)


# -- the editor -----------------------------------------------------------------------------------


def _document(form: FlowEditForm) -> dict[str, Any]:
    """The trigger and steps the editor sent; ``Invalid`` says what is wrong with the JSON."""
    try:
        value = json.loads(form.document or "{}")
    except ValueError as error:
        raise Invalid(f"The flow's JSON does not parse: {error}") from None
    if not isinstance(value, dict):
        raise Invalid('The flow\'s JSON must be an object: {"trigger": ..., "steps": [...]}')
    unknown = sorted(set(value) - {"trigger", "steps"})
    if unknown:
        raise Invalid(f"The flow's JSON has only trigger and steps, not {', '.join(unknown)}")
    return {"trigger": value.get("trigger"), "steps": value.get("steps", [])}


def _payload(text: str | None) -> Any:
    if not (text or "").strip():
        return {}
    try:
        return json.loads(text)
    except ValueError as error:
        raise Invalid(f"The sample payload is not JSON: {error}") from None


async def _editor(
    request: web.Request,
    view: View,
    *,
    flow: Flow | None,
    name: str,
    description: str,
    document: str,
    payload: str,
    problems: list[Problem],
    error: str | None = None,
    run_id: str | None = None,
    status: int = 200,
) -> web.Response:
    """The editor's page: the trigger and steps as forms made from each step type's JSON Schema
    (and each action's input schema) by ``flow_editor.js``, on the JSON document the form posts."""
    services = view.services
    run = None
    if run_id and flow is not None:
        execution, steps = await executions.execution_with_steps(services, workspace_id=view.workspace_id, flow_id=flow.id, execution_id=run_id)
        shown = [(step, pretty(step.input) if step.input is not None else None, pretty(step.output) if step.output is not None else None) for step in steps]
        run = {"execution": execution, "steps": shown, "outputs": {step.step_id: step.output for step in steps if step.status == "completed"}}
        if not payload:
            payload = pretty(execution.trigger_payload)
    connections, _ = await connection_page(services, workspace_id=view.workspace_id, provider=None, status=None, end_user_id=None, page=1, limit=200)
    data = {
        "stepTypes": step_types(services.registry),
        "actions": all_actions(services.registry),
        "triggers": trigger_options(services.registry),
        "connections": [
            {"id": c["id"], "provider": c["provider"], "label": (c["metadata"] or {}).get("displayName") or c["id"]}
            for c in connections
            if c["status"] != "disconnected"
        ],
        "problems": [p.json() for p in problems],
        "outputs": run["outputs"] if run else {},
        "results": {step.step_id: {"status": step.status, "error": step.error} for step, _, _ in run["steps"]} if run else {},
    }
    context = {
        "flow": flow,
        "name": name,
        "description": description,
        "document": document,
        "payload": payload,
        "problems": problems,
        "error": error,
        "run": run,
        # in the schemas' own order (``tojson`` would sort the keys: the fields would come alphabetically)
        "data": htmlsafe_json_dumps(data, dumps=json.dumps),
        "target": view.url(f"flows/{flow.id}/edit" if flow is not None else "flows/new"),
    }
    return render(request, "console/flow_editor.html", context, view=view, status=status, current="flows")


def _document_text(flow: Flow | None) -> str:
    return json.dumps({"trigger": flow.trigger if flow else None, "steps": (flow.steps or []) if flow else []}, indent=2, ensure_ascii=False)


@routes.get(BASE + "/new")
@page(role="manager", description="The editor of a new flow")
async def new_flow_page(request: web.Request, view: View) -> web.Response:
    """The flow editor, empty: a new flow is saved as a draft."""
    return await _editor(request, view, flow=None, name="", description="", document=_document_text(None), payload="", problems=[])


@routes.get(BASE + "/{flow_id}/edit")
@page(role="manager", description="The flow editor")
async def edit_flow_page(request: web.Request, view: View) -> web.Response:
    """The flow editor on the flow's current steps, with their problems beside each step and field;
    ``?run=`` shows a test run's steps (input, output, error, the paths taken and skipped)."""
    flow, problems = await service.checked_flow(view.services, workspace_id=view.workspace_id, flow_id=request.match_info["flow_id"])
    return await _editor(
        request,
        view,
        flow=flow,
        name=flow.name,
        description=flow.description or "",
        document=_document_text(flow),
        payload="",
        problems=problems,
        run_id=request.query.get("run") or None,
    )


async def _save(request: web.Request, view: View, form: FlowEditForm, flow_id: str | None) -> web.Response:
    """Create or update the flow through the flows service (as the API does), then test it when
    asked; bad input answers the editor again (400) with what is wrong, nothing saved."""
    flow = None
    if flow_id is not None:
        flow = await service.load_flow(view.services, workspace_id=view.workspace_id, flow_id=flow_id)
    try:
        document = _document(form)
        payload = _payload(form.payload) if form.intent == "test" else None
        body = {"name": form.name, "description": form.description or None, **document}
        if flow is None:
            flow, _ = await service.create_flow(view.services, workspace_id=view.workspace_id, body=body)
        else:
            flow, _ = await service.update_flow(view.services, workspace_id=view.workspace_id, flow_id=flow.id, body=body)
    except Invalid as error:
        return await _editor(
            request,
            view,
            flow=flow,
            name=form.name,
            description=form.description or "",
            document=form.document,
            payload=form.payload or "",
            problems=[],
            error=str(error),
            status=400,
        )
    if form.intent == "test":
        execution, _ = await service.run_flow_now(view.services, workspace_id=view.workspace_id, flow_id=flow.id, payload=payload)
        raise see_other(request, view.url(f"flows/{flow.id}/edit?run={execution.id}#test-run"))
    shown = f"?run={form.run}#test-run" if form.run and flow_id is not None else ""
    raise see_other(request, view.url(f"flows/{flow.id}/edit{shown}"))


@routes.post(BASE + "/new")
@returns(HTML, status=400, description="The editor again with what is wrong; nothing is saved")
@action(form=FlowEditForm, description="Saved as a draft (and tested): to its editor")
async def create_flow(request: web.Request, view: View, form: FlowEditForm) -> web.StreamResponse:
    """Create the flow as a draft (the service of ``POST /connect/v1/flows``); ``intent=test``
    also runs it on the sample payload."""
    return await _save(request, view, form, None)


@routes.post(BASE + "/{flow_id}/edit")
@returns(HTML, status=400, description="The editor again with what is wrong; nothing is saved")
@action(form=FlowEditForm, description="Saved as a draft (and tested): to its editor")
async def save_flow(request: web.Request, view: View, form: FlowEditForm) -> web.StreamResponse:
    """Save the flow's name, trigger and steps (the service of ``PATCH /connect/v1/flows/{id}``;
    a published flow becomes a draft, its published version keeps running); ``intent=test`` also
    runs the saved steps on the sample payload (the service of ``POST /connect/v1/flows/{id}/test``)."""
    return await _save(request, view, form, request.match_info["flow_id"])


@routes.get(BASE + "/{flow_id}")
@page()
async def flow_page(request: web.Request, view: View) -> web.Response:
    """A flow: its trigger, its steps as a chain with each one's configuration, its versions."""
    flow_id = request.match_info["flow_id"]
    flow = await service.load_flow(view.services, workspace_id=view.workspace_id, flow_id=flow_id)
    versions = await service.flow_versions(view.services, workspace_id=view.workspace_id, flow_id=flow.id)
    steps = [(step if isinstance(step, dict) else {}, step_config(step)) for step in flow.steps or []]
    context = {"flow": flow, "steps": steps, "versions": sorted(versions, key=lambda v: -v.version), "trigger": pretty(flow.trigger) if flow.trigger else None}
    return render(request, "console/flow.html", context, view=view, current="flows")


@routes.get(BASE + "/{flow_id}/diff")
@page()
async def diff_page(request: web.Request, view: View) -> web.Response:
    """The difference between two versions of a flow (``?from=&to=``; ``to=current``: the steps being edited)."""
    flow = await service.load_flow(view.services, workspace_id=view.workspace_id, flow_id=request.match_info["flow_id"])
    versions = {v.version: v for v in await service.flow_versions(view.services, workspace_id=view.workspace_id, flow_id=flow.id)}

    def steps_of(name: str) -> tuple[str, list[Any]]:
        value = request.query.get(name, "")
        if value == "current":
            return "current steps", flow.steps or []
        if not value.isdigit() or int(value) not in versions:
            raise Invalid(f"{name} must be one of the flow's versions ({', '.join(map(str, sorted(versions))) or 'none yet'}) or current")
        return f"version {value}", versions[int(value)].steps or []

    old_name, old = steps_of("from")
    new_name, new = steps_of("to")
    context = {"flow": flow, "old_name": old_name, "new_name": new_name, "diff": steps_diff(old, new, old_name, new_name)}
    return render(request, "console/flow_diff.html", context, view=view, current="flows")


@routes.post(BASE + "/{flow_id}/publish")
@action(form=CsrfOnlyForm)
async def publish(request: web.Request, view: View, _form: CsrfOnlyForm) -> web.StreamResponse:
    """Publish the flow's steps as a new version."""
    flow = await service.publish_flow(view.services, workspace_id=view.workspace_id, flow_id=request.match_info["flow_id"])
    raise see_other(request, view.url(f"flows/{flow.id}"))


@routes.post(BASE + "/{flow_id}/revert")
@action(form=RevertForm)
async def revert(request: web.Request, view: View, form: RevertForm) -> web.StreamResponse:
    """Restore a version's steps and publish them as a new version."""
    if not form.version.isdigit():
        raise Invalid("version must be a whole number")
    flow = await service.revert_flow(view.services, workspace_id=view.workspace_id, flow_id=request.match_info["flow_id"], version=int(form.version))
    raise see_other(request, view.url(f"flows/{flow.id}"))


@routes.post(BASE + "/{flow_id}/toggle")
@action(form=CsrfOnlyForm)
async def toggle(request: web.Request, view: View, _form: CsrfOnlyForm) -> web.StreamResponse:
    """Pause or resume the live runs of a published flow."""
    flow = await service.toggle_flow(view.services, workspace_id=view.workspace_id, flow_id=request.match_info["flow_id"], active=None)
    raise see_other(request, view.url(f"flows/{flow.id}"))


@routes.post(BASE + "/{flow_id}/archive")
@action(form=CsrfOnlyForm)
async def archive(request: web.Request, view: View, _form: CsrfOnlyForm) -> web.StreamResponse:
    """Archive the flow (no more live runs; publishing brings it back)."""
    flow = await service.archive_flow(view.services, workspace_id=view.workspace_id, flow_id=request.match_info["flow_id"])
    raise see_other(request, view.url(f"flows/{flow.id}"))


# -- executions -----------------------------------------------------------------------------------


def _cursor(value: str | None) -> tuple[datetime, str] | None:
    """``?before=`` of the executions: ``<ISO time>~<id>`` of the previous page's last row."""
    if not value:
        return None
    moment, _, row_id = value.partition("~")
    try:
        parsed = datetime.fromisoformat(moment)
    except ValueError:
        raise Invalid("before is not a page of this list: open the list again") from None
    if not row_id or parsed.tzinfo is None:
        raise Invalid("before is not a page of this list: open the list again")
    return parsed.astimezone(UTC), row_id


@routes.get(BASE + "/{flow_id}/executions")
@page()
async def executions_page(request: web.Request, view: View) -> web.Response:
    """A flow's executions, newest first: ``?status=``, ``?range=`` (1h, 24h, 7d, 30d), paged by
    keyset (``?before=``, the link to the next page)."""
    flow = await service.load_flow(view.services, workspace_id=view.workspace_id, flow_id=request.match_info["flow_id"])
    status = request.query.get("status") or None
    span = request.query.get("range") or None
    if span is not None and span not in RANGES:
        raise Invalid(f"range must be one of {', '.join(RANGES)}")
    since = utcnow() - RANGES[span] if span else None
    rows, after = await executions.execution_keyset(
        view.services,
        workspace_id=view.workspace_id,
        flow_id=flow.id,
        status=status,
        since=since,
        until=None,
        before=_cursor(request.query.get("before")),
        limit=PAGE_SIZE,
    )
    query = {key: value for key, value in (("status", status), ("range", span)) if value}
    next_query = {**query, "before": f"{after[0].isoformat()}~{after[1]}"} if after else None
    context = {"flow": flow, "executions": rows, "status": status, "span": span, "statuses": EXECUTION_STATUSES, "ranges": RANGES, "next_query": next_query}
    return render(request, "console/flow_executions.html", context, view=view, current="flows")


@routes.get(BASE + "/{flow_id}/executions/{execution_id}")
@page()
async def execution_page(request: web.Request, view: View) -> web.Response:
    """An execution: its trigger payload, and every step's input, output, error and duration."""
    flow = await service.load_flow(view.services, workspace_id=view.workspace_id, flow_id=request.match_info["flow_id"])
    execution, steps = await executions.execution_with_steps(
        view.services, workspace_id=view.workspace_id, flow_id=flow.id, execution_id=request.match_info["execution_id"]
    )
    shown = [(step, pretty(step.input) if step.input is not None else None, pretty(step.output) if step.output is not None else None) for step in steps]
    context = {"flow": flow, "execution": execution, "steps": shown, "payload": pretty(execution.trigger_payload), **await waiting_on(view, execution.id)}
    return render(request, "console/flow_execution.html", context, view=view, current="flows")


@routes.post(BASE + "/{flow_id}/executions/{execution_id}/replay")
@action(form=CsrfOnlyForm)
async def replay(request: web.Request, view: View, _form: CsrfOnlyForm) -> web.StreamResponse:
    """Run the flow again with the execution's original trigger payload; opens the new execution."""
    execution = await executions.replay(
        view.services, workspace_id=view.workspace_id, flow_id=request.match_info["flow_id"], execution_id=request.match_info["execution_id"]
    )
    raise see_other(request, view.url(f"flows/{execution.flow_id}/executions/{execution.id}"))


@routes.post(BASE + "/{flow_id}/executions/{execution_id}/retry")
@action(form=RetryForm, description="Queued: to the new execution")
async def retry(request: web.Request, view: View, form: RetryForm) -> web.StreamResponse:
    """Run a failed execution again from a step, reusing the outputs of the steps before it that
    completed (the service of ``POST /connect/v1/flows/{id}/executions/{executionId}/retry``)."""
    execution = await executions.retry(
        view.services,
        workspace_id=view.workspace_id,
        flow_id=request.match_info["flow_id"],
        execution_id=request.match_info["execution_id"],
        from_step=form.fromStep or None,
        version=form.version,
    )
    raise see_other(request, view.url(f"flows/{execution.flow_id}/executions/{execution.id}"))
