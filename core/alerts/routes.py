"""Alert subscriptions over HTTP (spec 4.11): ``/connect/v1/alerts`` (``core.alerts.service`` does
the work)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from patchbay.core.alerts import service
from patchbay.core.alerts.api_models import AlertDeleted, AlertOut, CreateAlertDto, UpdateAlertDto
from patchbay.core.alerts.models import EVENT_TYPES, AlertSubscription
from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import read_object, structure
from patchbay.core.http.errors import bad_request
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso

routes = web.RouteTableDef()


def alert_json(subscription: AlertSubscription) -> dict[str, Any]:
    return {
        "id": subscription.id,
        "subscriptionId": subscription.id,
        "channel": subscription.channel,
        "target": subscription.target,
        "eventTypes": list(subscription.event_types or []),
        "isActive": subscription.is_active,
        "createdAt": iso(subscription.created_at),
        "updatedAt": iso(subscription.updated_at),
    }


async def read_alert(request: web.Request, model: type[CreateAlertDto] | type[UpdateAlertDto]) -> CreateAlertDto | UpdateAlertDto:
    """The body as ``model``, 400 naming a field of the wrong type; ``eventTypes`` that is not a
    non-empty list is refused first (cattrs would read a string as the list of its characters)."""
    body = await read_object(request)
    if "eventTypes" in body and body["eventTypes"] is not None and (not isinstance(body["eventTypes"], list) or not body["eventTypes"]):
        raise bad_request(f"Validation failed: eventTypes must be a non-empty list of {', '.join(EVENT_TYPES)}")
    return structure(body, model)


@routes.get("/connect/v1/alerts")
@returns(list[AlertOut])
@requires("alerts.view")
async def list_alerts(request: web.Request) -> web.Response:
    """List the workspace's alert subscriptions."""
    rows = await service.list_alerts(request.app[SERVICES], principal_of(request).workspace_id)
    return reply(request, [alert_json(row) for row in rows])


@routes.post("/connect/v1/alerts")
@accepts(CreateAlertDto)
@returns(AlertOut, status=201, description="Subscribed")
@requires("alerts.write")
async def create_alert(request: web.Request) -> web.Response:
    """Subscribe a channel target to flow.failed / flow.succeeded and the operator events."""
    dto = await read_alert(request, CreateAlertDto)
    subscription = await service.create_alert(
        request.app[SERVICES], principal_of(request).workspace_id, channel=dto.channel, target=dto.target, event_types=dto.eventTypes, is_active=dto.isActive
    )
    return reply(request, alert_json(subscription), status=201)


@routes.patch("/connect/v1/alerts/{subscriptionId}")
@accepts(UpdateAlertDto)
@returns(AlertOut)
@requires("alerts.write")
async def update_alert(request: web.Request) -> web.Response:
    """Change an alert subscription: isActive, target, eventTypes."""
    dto = await read_alert(request, UpdateAlertDto)
    subscription = await service.update_alert(
        request.app[SERVICES],
        principal_of(request).workspace_id,
        request.match_info["subscriptionId"],
        is_active=dto.isActive,
        target=dto.target,
        event_types=dto.eventTypes,
    )
    return reply(request, alert_json(subscription))


@routes.delete("/connect/v1/alerts/{subscriptionId}")
@returns(AlertDeleted)
@requires("alerts.write")
async def delete_alert(request: web.Request) -> web.Response:
    """Delete an alert subscription."""
    await service.delete_alert(request.app[SERVICES], principal_of(request).workspace_id, request.match_info["subscriptionId"])
    return reply(request, {"success": True})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
