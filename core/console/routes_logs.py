"""The Logs page (Nango's "operations"): one timeline of proxy calls, token refreshes, MCP tool
calls, inbound events, outbound deliveries and flow executions, filtered, searchable by id and
paged by keyset; a detail pane per entry (request and answer, secrets redacted, bodies cut); the
actions that fix things (replay an inbound event, redeliver a delivery, retry an execution), each
the service its API route calls; and ``tail.json``, which the page's live tail polls."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from patchbay.core.connections import timeline as audit_timeline
from patchbay.core.console import logs
from patchbay.core.console.form_models import CsrfOnlyForm
from patchbay.core.console.pages import NAV_ORDER, NavItem, View, action, page, page_headers, render, see_other
from patchbay.core.console.service import PREFIX
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.flows import executions
from patchbay.core.flows import timeline as flows_timeline
from patchbay.core.http.responses import Media, returns
from patchbay.core.timeline import KIND_LABELS, KINDS, STATUSES, Key, Query
from patchbay.core.webhooks import events_service
from patchbay.core.webhooks import timeline as webhooks_timeline

routes = web.RouteTableDef()
NAV = NavItem("Logs", "logs", NAV_ORDER["Logs"])
BASE = PREFIX + "/w/{workspace_id}/logs"
PAGE_SIZE = 50
TAIL_SIZE = 100
#: the live tail's answer
TAIL = Media(
    "application/json", {"type": "object", "properties": {"entries": {"type": "array", "items": {"type": "object"}}, "key": {"type": ["string", "null"]}}}
)
FILTERS = ("kind", "provider", "connection", "status", "since", "until", "q")


def _moment(value: str, name: str) -> datetime:
    """A ``datetime-local`` field's value (or any ISO 8601 moment), read as UTC when it names no zone."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise Invalid(f"{name} must be a date and time such as 2026-11-27T13:40") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _filters(request: web.Request) -> dict[str, str]:
    return {name: request.query[name].strip() for name in FILTERS if request.query.get(name, "").strip()}


def _query(view: View, filters: dict[str, str], *, limit: int, before: str | None = None, after: str | None = None) -> Query:
    kind = filters.get("kind")
    if kind and kind not in KINDS:
        raise Invalid(f"kind must be one of {', '.join(KINDS)}")
    status = filters.get("status")
    if status and status not in STATUSES:
        raise Invalid(f"status must be one of {', '.join(STATUSES)}")
    search = filters.get("q")
    if search and len(search) > 200:
        raise Invalid("search must be at most 200 characters")
    return Query(
        workspace_id=view.workspace_id,
        kinds=frozenset([kind]) if kind else frozenset(),
        provider=filters.get("provider"),
        connection_id=filters.get("connection"),
        status=status,
        since=_moment(filters["since"], "since") if "since" in filters else None,
        until=_moment(filters["until"], "until") if "until" in filters else None,
        search=search,
        before=Key.decode(before) if before else None,
        after=Key.decode(after, "after") if after else None,
        limit=limit,
    )


def _row(view: View, entry) -> dict[str, Any]:
    return {**entry.json(), "url": view.url(f"logs/{entry.kind}/{entry.id}"), "when": entry.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")}


@routes.get(BASE)
@page()
async def log_page(request: web.Request, view: View) -> web.Response:
    """The timeline, newest first: ``kind``, ``provider``, ``connection``, ``status`` (ok, failed,
    pending), ``since``/``until`` and ``q`` (an id) filter; ``cursor`` pages."""
    filters = _filters(request)
    cursor = request.query.get("cursor")
    query = _query(view, filters, limit=PAGE_SIZE, before=cursor)
    entries, next_key = await logs.timeline(view.services, query)
    rows = [_row(view, entry) for entry in entries]
    context = {
        "rows": rows,
        "filters": filters,
        "kinds": [(kind, KIND_LABELS[kind]) for kind in KINDS],
        "statuses": STATUSES,
        "paged": bool(cursor),
        "next_url": view.url("logs") + "?" + urlencode({**filters, "cursor": next_key.encode()}) if next_key else None,
        "first_url": view.url("logs") + ("?" + urlencode(filters) if filters else ""),
        "tail_url": view.url("logs/tail.json") + ("?" + urlencode(filters) if filters else ""),
        "newest": rows[0]["key"] if rows else "",
    }
    return render(request, "console/logs.html", context, view=view, current="logs")


@routes.get(BASE + "/tail.json")
@returns(TAIL, description="The entries newer than ``after``, oldest first, and the newest key")
@page(description="Not used: the entries are JSON")
async def log_tail(request: web.Request, view: View) -> web.Response:
    """The live tail: the entries after the key ``after`` (the newest the page shows), oldest
    first, with the page's filters; ``key`` is the newest key to ask with next."""
    filters = _filters(request)
    after = request.query.get("after") or None
    query = _query(view, filters, limit=TAIL_SIZE, after=after)
    if after is None:  # no row on the page yet: the newest ones, oldest first
        entries, _ = await logs.timeline(view.services, _query(view, filters, limit=TAIL_SIZE))
        entries.reverse()
    else:
        entries, _ = await logs.timeline(view.services, query)
    rows = [_row(view, entry) for entry in entries]
    body = {"entries": rows, "key": rows[-1]["key"] if rows else after}
    return web.json_response(body, headers=page_headers(request))


# -- the detail pane ------------------------------------------------------------------------------


async def _audit_detail(view: View, kind: str, entry_id: str) -> dict[str, Any]:
    row = await audit_timeline.audit_row(view.services, workspace_id=view.workspace_id, row_id=entry_id)
    if row is None or audit_timeline.entry_of(row).kind != kind:
        raise NotFound("No such log entry")
    facts = [("Provider", row.provider), ("Connection", row.connection_id), ("Source", row.source), ("Duration", f"{row.duration_ms:.0f} ms")]
    for label, name in (("OAuth client", "client_id"), ("User", "user_id")):  # an MCP tool call's, where the audit holds them
        if getattr(row, name, None):
            facts.append((label, getattr(row, name)))
    return {
        "entry": audit_timeline.entry_of(row),
        "facts": facts,
        "connection_id": row.connection_id,
        "request": f"{row.method} {row.path}\n(the audit keeps no query string, header or body)",
        "answer": logs.shown(f"status {row.status or 'none (no answer)'}" + (f"\n{row.error}" if row.error else "")),
    }


async def _inbound_detail(view: View, entry_id: str) -> dict[str, Any]:
    event, deliveries, attempts = await events_service.event_with_deliveries(view.services, view.workspace_id, entry_id)
    entry = (await webhooks_timeline.log_entries(view.services, Query(workspace_id=view.workspace_id, kinds=frozenset(["inbound"]), search=event.id, limit=1)))[
        0
    ]
    return {
        "entry": entry,
        "facts": [
            ("Provider", event.provider),
            ("Event type", event.event_type or "none"),
            ("Connection", event.connection_id or "not routed"),
            ("Status", event.status),
            ("Reason", event.reason or ""),
            ("External id", event.external_id or ""),
            ("Processed", event.processed_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if event.processed_at else "not yet"),
        ],
        "connection_id": event.connection_id,
        "request": logs.shown(event.body) if event.body is not None else logs.shown(event.payload),
        "request_label": "Body as received",
        "answer": logs.shown(event.payload),
        "answer_label": "Payload extracted",
        "deliveries": [(delivery, attempts[delivery.id]) for delivery in deliveries],
        "can_replay": event.status != "RECEIVED",
    }


async def _delivery_detail(view: View, entry_id: str) -> dict[str, Any]:
    delivery, attempts, subscription, event = await webhooks_timeline.delivery_detail(view.services, workspace_id=view.workspace_id, delivery_id=entry_id)
    entry = (
        await webhooks_timeline.log_entries(view.services, Query(workspace_id=view.workspace_id, kinds=frozenset(["delivery"]), search=delivery.id, limit=1))
    )[0]
    body = delivery.body if delivery.body is not None else None
    return {
        "entry": entry,
        "facts": [
            ("Endpoint", subscription.url if subscription else "removed"),
            ("Event", delivery.event_id),
            ("Status", delivery.status),
            ("Attempts", str(delivery.attempts)),
            ("Last answer", str(delivery.last_status_code) if delivery.last_status_code is not None else "none"),
            (
                "Next attempt",
                delivery.next_attempt_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if delivery.next_attempt_at and delivery.status == "pending" else "",
            ),
            ("Manual", "yes" if delivery.manual else "no"),
        ],
        "connection_id": event.connection_id if event else None,
        "event_id": delivery.event_id,
        "request": logs.shown(body) if body is not None else logs.shown(event.payload if event else None),
        "request_label": "Body sent (signed)",
        "answer": logs.shown(delivery.last_error) if delivery.last_error else None,
        "answer_label": "Last error",
        "attempts": [{"attempt": a, "excerpt": logs.shown(a.response_excerpt, limit=1024), "error": logs.shown(a.error, limit=1024)} for a in attempts],
        "can_redeliver": subscription is not None and subscription.is_active,
    }


async def _execution_detail(view: View, entry_id: str) -> dict[str, Any]:
    execution, flow_name, steps = await flows_timeline.execution_by_id(view.services, workspace_id=view.workspace_id, execution_id=entry_id)
    entry = (
        await flows_timeline.log_entries(view.services, Query(workspace_id=view.workspace_id, kinds=frozenset(["execution"]), search=execution.id, limit=1))
    )[0]
    return {
        "entry": entry,
        "facts": [
            ("Flow", f"{flow_name} ({execution.flow_id})"),
            ("Version", str(execution.version) if execution.version is not None else "unpublished steps"),
            ("Started by", execution.trigger_source),
            ("Status", execution.status),
            ("Duration", f"{execution.duration_ms} ms" if execution.duration_ms is not None else ""),
            ("Replay of", execution.replay_of or ""),
        ],
        "connection_id": entry.connection_id,
        "request": logs.shown(execution.trigger_payload),
        "request_label": "Trigger payload",
        "answer": logs.shown(execution.error) if execution.error else None,
        "answer_label": "Error",
        "steps": [{"step": s, "input": logs.shown(s.input), "output": logs.shown(s.output), "error": logs.shown(s.error)} for s in steps],
        "can_retry": execution.status in ("failed", "completed"),
    }


@routes.get(BASE + "/{kind}/{entry_id}")
@page()
async def log_entry(request: web.Request, view: View) -> web.Response:
    """One entry of the timeline: its facts, the request and the answer (secrets redacted, bodies
    cut), a delivery's attempts, an execution's steps, and the action that fixes it."""
    kind, entry_id = request.match_info["kind"], request.match_info["entry_id"]
    if kind in ("proxy", "refresh", "tool"):
        context = await _audit_detail(view, kind, entry_id)
    elif kind == "inbound":
        context = await _inbound_detail(view, entry_id)
    elif kind == "delivery":
        context = await _delivery_detail(view, entry_id)
    elif kind == "execution":
        context = await _execution_detail(view, entry_id)
    else:
        raise NotFound("No such kind of log entry")
    return render(request, "console/logs_entry.html", {"kind": kind, **context}, view=view, current="logs")


# -- the actions ----------------------------------------------------------------------------------


@routes.post(BASE + "/inbound/{entry_id}/replay")
@action(role="manager", form=CsrfOnlyForm, description="Queued: to the event, with its new deliveries")
async def replay_event(request: web.Request, view: View, form: CsrfOnlyForm) -> web.StreamResponse:
    """Forward an inbound event again to its subscriptions (the service of
    ``POST /connect/v1/webhooks/events/{id}/redeliver``)."""
    event, _ = await events_service.redeliver_event(view.services, view.workspace_id, request.match_info["entry_id"], subscription_id=None)
    raise see_other(request, view.url(f"logs/inbound/{event.id}"))


@routes.post(BASE + "/delivery/{entry_id}/redeliver")
@action(role="manager", form=CsrfOnlyForm, description="Queued: to the new delivery")
async def redeliver(request: web.Request, view: View, form: CsrfOnlyForm) -> web.StreamResponse:
    """Send a delivery's event again to its endpoint (the service of
    ``POST /connect/v1/webhooks/events/{id}/redeliver`` with its ``subscriptionId``)."""
    delivery, _, _, _ = await webhooks_timeline.delivery_detail(view.services, workspace_id=view.workspace_id, delivery_id=request.match_info["entry_id"])
    _, created = await events_service.redeliver_event(view.services, view.workspace_id, delivery.event_id, subscription_id=delivery.subscription_id)
    raise see_other(request, view.url(f"logs/delivery/{created[0].id}"))


@routes.post(BASE + "/execution/{entry_id}/retry")
@action(role="manager", form=CsrfOnlyForm, description="Queued: to the new execution")
async def retry_execution(request: web.Request, view: View, form: CsrfOnlyForm) -> web.StreamResponse:
    """Run the flow again with the execution's trigger payload (the service of
    ``POST /connect/v1/flows/{flowId}/executions/{executionId}/replay``)."""
    execution, _, _ = await flows_timeline.execution_by_id(view.services, workspace_id=view.workspace_id, execution_id=request.match_info["entry_id"])
    created = await executions.replay(view.services, workspace_id=view.workspace_id, flow_id=execution.flow_id, execution_id=execution.id)
    raise see_other(request, view.url(f"logs/execution/{created.id}"))
