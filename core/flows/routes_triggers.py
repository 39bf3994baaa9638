"""Flow trigger subscriptions over HTTP (spec 4.10): ``/connect/v1/flows/{flowId}/triggers``."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from sqlalchemy import select

from patchbay.core.appkeys import CRON, DB, REGISTRY
from patchbay.core.billing.limits import enforce_limit, register_counter
from patchbay.core.connections.models import Connection
from patchbay.core.flows import service, triggers
from patchbay.core.flows.api_models import CreateTriggerDto, Done, TriggerSubscriptionOut, read_checked
from patchbay.core.flows.models import FlowTriggerSubscription
from patchbay.core.http.errors import bad_request, not_found
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.jobs.cron import CronJob
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso

routes = web.RouteTableDef()

POLL_INTERVAL_SECONDS = 60


def subscription_json(subscription: FlowTriggerSubscription) -> dict[str, Any]:
    return {
        "id": subscription.id,
        "subscriptionId": subscription.id,
        "flowId": subscription.flow_id,
        "providerType": subscription.provider_type,
        "triggerName": subscription.trigger_name,
        "kind": subscription.kind,
        "connectionId": subscription.connection_id,
        "config": subscription.config,
        "isActive": subscription.is_active,
        "cursor": subscription.cursor,
        "lastPolledAt": iso(subscription.last_polled_at),
        "lastError": subscription.last_error,
        "createdAt": iso(subscription.created_at),
    }


@routes.get("/connect/v1/flows/{flowId}/triggers")
@returns(list[TriggerSubscriptionOut])
@requires("triggers.view")
async def list_triggers(request: web.Request) -> web.Response:
    """A flow's trigger subscriptions."""
    async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
        flow = await service.get_flow(session, request.match_info["flowId"])
        rows = (await session.scalars(select(FlowTriggerSubscription).where(FlowTriggerSubscription.flow_id == flow.id).order_by(FlowTriggerSubscription.created_at))).all()
    return reply(request, [subscription_json(s) for s in rows])


@routes.post("/connect/v1/flows/{flowId}/triggers")
@accepts(CreateTriggerDto)
@returns(TriggerSubscriptionOut, status=201, description="Subscribed")
@requires("triggers.write")
async def create_trigger(request: web.Request) -> web.Response:
    """Subscribe a flow to a provider trigger (webhook or poll); plan-capped."""
    body = await read_checked(request, CreateTriggerDto)
    provider_type, trigger_name, kind = body.get("providerType"), body.get("triggerName"), body.get("kind")
    connection_id, config = body.get("connectionId"), body.get("config") or {}
    registry = request.app[REGISTRY]
    if registry.provider(provider_type) is None:
        raise not_found(f"Provider not found: {provider_type}")
    trigger = (registry.get("triggers", provider_type) or {}).get(trigger_name)
    if trigger is None:
        raise bad_request(f"triggerName: {provider_type} has no trigger named {trigger_name!r} (see GET /connect/v1/flows/trigger-options)")
    kind = kind or trigger.kind
    if kind != trigger.kind:
        raise bad_request(f"kind: trigger {trigger_name!r} is a {trigger.kind} trigger")
    if kind == "poll" and not connection_id:
        raise bad_request("connectionId is required for a poll trigger")
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        flow = await service.get_flow(session, request.match_info["flowId"])
        if connection_id:
            connection = await session.scalar(select(Connection).where(Connection.id == connection_id))
            if connection is None or connection.status == "disconnected":
                raise bad_request("connectionId: no such connection in this workspace")
            if connection.provider != provider_type:
                raise bad_request(f"connectionId: the connection is to {connection.provider}, not {provider_type}")
        await enforce_limit(session, workspace_id, "active_triggers")
        subscription = FlowTriggerSubscription(flow_id=flow.id, provider_type=provider_type, trigger_name=trigger_name, kind=kind,
                                               connection_id=connection_id, config=config, is_active=True)  # fmt: skip
        session.add(subscription)
    return reply(request, subscription_json(subscription), status=201)


@routes.delete("/connect/v1/flows/{flowId}/triggers/{subscriptionId}")
@returns(Done)
@requires("triggers.write")
async def delete_trigger(request: web.Request) -> web.Response:
    """Remove a trigger subscription."""
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        subscription = await session.scalar(
            select(FlowTriggerSubscription).where(
                FlowTriggerSubscription.id == request.match_info["subscriptionId"], FlowTriggerSubscription.flow_id == request.match_info["flowId"]
            )
        )
        if subscription is None:
            raise not_found("Trigger subscription not found")
        await session.delete(subscription)
    return reply(request, {"success": True})


def _register_listener(app: web.Application) -> None:
    """Hand our listener to the inbound-webhook pipeline, when that feature is installed."""
    try:
        from patchbay.core.webhooks.listeners import get_listeners
    except ImportError:
        return
    get_listeners(app).add(triggers.make_listener(app))


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
    app[CRON].add(CronJob("poll-triggers", POLL_INTERVAL_SECONDS, triggers.poll_triggers))
    register_counter(app, "active_triggers", triggers.count_active_triggers)
    _register_listener(app)
