"""Flow trigger subscriptions over HTTP (spec 4.10): ``/connect/v1/flows/{flowId}/triggers``."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.billing.limits import register_counter
from patchbay.core.flows import triggers
from patchbay.core.flows.api_models import CreateTriggerDto, Done, TriggerSubscriptionOut, read_checked
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


@routes.get("/connect/v1/flows/{flowId}/triggers")
@returns(list[TriggerSubscriptionOut])
@requires("triggers.view")
async def list_triggers(request: web.Request) -> web.Response:
    """A flow's trigger subscriptions."""
    rows = await triggers.list_subscriptions(request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=request.match_info["flowId"])
    return reply(request, [triggers.subscription_json(s) for s in rows])


@routes.post("/connect/v1/flows/{flowId}/triggers")
@accepts(CreateTriggerDto)
@returns(TriggerSubscriptionOut, status=201, description="Subscribed")
@requires("triggers.write")
async def create_trigger(request: web.Request) -> web.Response:
    """Subscribe a flow to a provider trigger (webhook or poll); plan-capped."""
    body = await read_checked(request, CreateTriggerDto)
    subscription = await triggers.subscribe(
        request.app[SERVICES], workspace_id=principal_of(request).workspace_id, flow_id=request.match_info["flowId"], body=body
    )
    return reply(request, triggers.subscription_json(subscription), status=201)


@routes.delete("/connect/v1/flows/{flowId}/triggers/{subscriptionId}")
@returns(Done)
@requires("triggers.write")
async def delete_trigger(request: web.Request) -> web.Response:
    """Remove a trigger subscription."""
    await triggers.unsubscribe(
        request.app[SERVICES],
        workspace_id=principal_of(request).workspace_id,
        flow_id=request.match_info["flowId"],
        subscription_id=request.match_info["subscriptionId"],
    )
    return reply(request, {"success": True})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
    register_counter(app[SERVICES], "active_triggers", triggers.count_active_triggers)
