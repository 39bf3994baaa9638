"""The workspace's inbound event log, deliveries with their attempts, and manual redelivery.

``GET /connect/v1/webhooks/events`` (``provider``, ``status``, ``eventType``, ``page``, ``limit``),
``GET /connect/v1/webhooks/events/{id}`` (with its deliveries),
``POST /connect/v1/webhooks/events/{id}/redeliver`` (``{subscriptionId?}``),
``GET /connect/v1/webhooks/deliveries`` (``eventId``, ``subscriptionId``, ``status``) and
``GET /connect/v1/webhooks/deliveries/{id}`` (with every attempt).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import page_envelope, page_params
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso
from patchbay.core.webhooks import events_service as service
from patchbay.core.webhooks.api_models import RedeliverDto, Redelivered, WebhookDeliveryPage, WebhookDeliveryWithAttempts, WebhookEventDetail, WebhookEventPage
from patchbay.core.webhooks.models import DELIVERY_STATUSES, EVENT_STATUSES, WebhookAttempt, WebhookDelivery, WebhookEvent
from patchbay.core.webhooks.routes_subscriptions import read_dto

routes = web.RouteTableDef()

#: ``status`` of the event log: the document lists the canonical (upper-case) values, which SDK
#: generators turn into enums (both cases would be duplicate members); either case is accepted
EVENT_STATUS_QUERY = {"type": "string", "enum": list(EVENT_STATUSES), "description": "Either case is accepted"}


def event_json(event: WebhookEvent) -> dict[str, Any]:
    return {
        "id": event.id,
        "provider": event.provider,
        "eventType": event.event_type,
        "status": event.status,
        "reason": event.reason,
        "connectionId": event.connection_id,
        "leadId": event.lead_id,
        "externalId": event.external_id,
        "parentId": event.parent_id,
        "payload": event.payload,
        "receivedAt": iso(event.created_at),
        "processedAt": iso(event.processed_at),
    }


def attempt_json(attempt: WebhookAttempt) -> dict[str, Any]:
    return {
        "attempt": attempt.number,
        "statusCode": attempt.status_code,
        "durationMs": attempt.duration_ms,
        "responseExcerpt": attempt.response_excerpt,
        "error": attempt.error,
        "at": iso(attempt.created_at),
    }


def delivery_json(delivery: WebhookDelivery, attempts: list[WebhookAttempt] | None = None) -> dict[str, Any]:
    body = {
        "id": delivery.id,
        "eventId": delivery.event_id,
        "subscriptionId": delivery.subscription_id,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "lastStatusCode": delivery.last_status_code,
        "lastError": delivery.last_error,
        "nextAttemptAt": iso(delivery.next_attempt_at),
        "deliveredAt": iso(delivery.delivered_at),
        "manual": delivery.manual,
        "createdAt": iso(delivery.created_at),
    }
    if attempts is not None:
        body["attemptLog"] = [attempt_json(a) for a in attempts]
    return body


def _filter(request: web.Request, name: str) -> str | None:
    """The query parameter ``name`` as a filter (None when left out or empty; NUL never gets here:
    ``core.http.bodies.refuse_nul``)."""
    return request.query.get(name) or None


@routes.get("/connect/v1/webhooks/events")
@query(**PAGE_QUERY, provider={"type": "string"}, eventType={"type": "string"}, status=EVENT_STATUS_QUERY)
@returns(WebhookEventPage)
@requires("webhooks.view")
async def list_events(request: web.Request) -> web.Response:
    """The workspace's inbound events, newest first."""
    page, limit = page_params(request)
    rows, total = await service.events_of(
        request.app[SERVICES],
        principal_of(request).workspace_id,
        provider=_filter(request, "provider"),
        event_type=_filter(request, "eventType"),
        status=_filter(request, "status"),
        page=page,
        limit=limit,
    )
    return reply(request, page_envelope([event_json(row) for row in rows], page, limit, total))


@routes.get("/connect/v1/webhooks/events/{id}")
@returns(WebhookEventDetail)
@requires("webhooks.view")
async def get_event(request: web.Request) -> web.Response:
    """One inbound event with its deliveries and their attempts."""
    event, deliveries, attempts = await service.event_with_deliveries(request.app[SERVICES], principal_of(request).workspace_id, request.match_info["id"])
    return reply(request, {**event_json(event), "deliveries": [delivery_json(d, attempts[d.id]) for d in deliveries]})


@routes.post("/connect/v1/webhooks/events/{id}/redeliver")
@accepts(RedeliverDto, required=False)
@returns(Redelivered, status=201, description="Redelivery queued")
@requires("webhooks.write")
async def redeliver(request: web.Request) -> web.Response:
    """Forward an event again to its subscriptions (or to ``subscriptionId``).

    409 while the event is not processed yet; 404 when ``subscriptionId`` names no active
    subscription of the workspace."""
    subscription_id = (await read_dto(request, RedeliverDto, optional=True)).subscriptionId
    event, deliveries = await service.redeliver_event(
        request.app[SERVICES], principal_of(request).workspace_id, request.match_info["id"], subscription_id=subscription_id
    )
    return reply(request, {"eventId": event.id, "deliveries": [delivery_json(d) for d in deliveries]}, status=201)


@routes.get("/connect/v1/webhooks/deliveries")
@query(**PAGE_QUERY, eventId={"type": "string"}, subscriptionId={"type": "string"}, status={"type": "string", "enum": list(DELIVERY_STATUSES)})
@returns(WebhookDeliveryPage)
@requires("webhooks.view")
async def list_deliveries(request: web.Request) -> web.Response:
    """Deliveries of the workspace, newest first, with their attempts."""
    page, limit = page_params(request)
    rows, total, attempts = await service.deliveries_with_attempts(
        request.app[SERVICES],
        principal_of(request).workspace_id,
        event_id=_filter(request, "eventId"),
        subscription_id=_filter(request, "subscriptionId"),
        status=_filter(request, "status"),
        page=page,
        limit=limit,
    )
    return reply(request, page_envelope([delivery_json(d, attempts[d.id]) for d in rows], page, limit, total))


@routes.get("/connect/v1/webhooks/deliveries/{id}")
@returns(WebhookDeliveryWithAttempts)
@requires("webhooks.view")
async def get_delivery(request: web.Request) -> web.Response:
    """One delivery with every attempt (status, duration, response excerpt)."""
    delivery, attempts = await service.delivery_with_attempts(request.app[SERVICES], principal_of(request).workspace_id, request.match_info["id"])
    return reply(request, delivery_json(delivery, attempts))
