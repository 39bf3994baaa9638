"""Billing routes (spec 4.16): the workspace's plan and limits, metered usage, and its subscription
with the payment provider (checkout, portal, cancel at period end, resume, webhook).

Without a configured payment provider the read routes work and the others answer 400; the plan is
then set through the CLI or the accounts API.
"""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.billing import service
from patchbay.core.billing.api_models import (
    BillingPlan,
    BillingSubscription,
    BillingUsage,
    CheckoutDto,
    CheckoutSession,
    PortalDto,
    PortalSession,
    UsageHistory,
    WebhookReceipt,
    subscription_json,
)
from patchbay.core.billing.limits import current_period
from patchbay.core.http.bodies import query_int, read_body
from patchbay.core.http.openapi import accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


@routes.get("/connect/v1/billing/plan")
@returns(BillingPlan)
@requires("billing.view")
async def get_plan(request: web.Request) -> web.Response:
    """The workspace's plan, its limits and its subscription."""
    plan, limits, subscription, provider, available = await service.plan_of(request.app[SERVICES], principal_of(request).workspace_id)
    return reply(
        request,
        {"plan": plan, "limits": limits, "subscription": subscription_json(subscription), "paymentProvider": provider, "availablePlans": available},
    )


@routes.get("/connect/v1/billing/usage")
@returns(BillingUsage)
@requires("billing.view")
async def get_usage(request: web.Request) -> web.Response:
    """This month's usage of every limited resource, with the plan's limit (null: unlimited)."""
    plan, usage = await service.usage_of(request.app[SERVICES], principal_of(request).workspace_id)
    return reply(request, {"period": current_period(), "plan": plan, "usage": usage})


@routes.get("/connect/v1/billing/usage/history")
@query(months={"type": "integer", "minimum": 1, "maximum": 120, "default": 12})
@returns(UsageHistory)
@requires("billing.view")
async def get_usage_history(request: web.Request) -> web.Response:
    """Metered usage per month, newest first (``?months=``, default 12, at most 120)."""
    months = query_int(request, "months", 12, maximum=120)
    return reply(request, {"data": await service.usage_by_month(request.app[SERVICES], principal_of(request).workspace_id, months)})


@routes.post("/connect/v1/billing/checkout")
@accepts(CheckoutDto)
@returns(CheckoutSession, status=201, description="Checkout started")
@requires("billing.write")
async def create_checkout(request: web.Request) -> web.Response:
    """Start a checkout of a paid plan (``{plan, successUrl?, cancelUrl?}``); answers ``{url, id}``."""
    principal = principal_of(request)
    body = await read_body(request, CheckoutDto)
    user_id = principal.subject if principal.kind == "access_token" and principal.subject else None
    name, checkout = await service.start_checkout(
        request.app[SERVICES], workspace_id=principal.workspace_id, user_id=user_id, plan=body.plan, success_url=body.successUrl, cancel_url=body.cancelUrl
    )
    return reply(request, {"id": checkout.id, "url": checkout.url, "provider": name}, status=201)


@routes.post("/connect/v1/billing/portal")
@accepts(PortalDto, required=False)
@returns(PortalSession, status=201, description="Portal session opened")
@requires("billing.write")
async def create_portal(request: web.Request) -> web.Response:
    """Open a customer-portal session (``{returnUrl?}``); answers ``{url}``."""
    body = await read_body(request, PortalDto) if (await request.read()).strip() else PortalDto()
    url = await service.open_portal(request.app[SERVICES], principal_of(request).workspace_id, return_url=body.returnUrl)
    return reply(request, {"url": url}, status=201)


@routes.delete("/connect/v1/billing/subscription")
@returns(BillingSubscription)
@requires("billing.write")
async def cancel_subscription(request: web.Request) -> web.Response:
    """Cancel the subscription at the end of the current period."""
    row = await service.change_subscription(request.app[SERVICES], principal_of(request).workspace_id, resume=False)
    return reply(request, subscription_json(row))


@routes.post("/connect/v1/billing/subscription/resume")
@returns(BillingSubscription, status=201, description="Resumed")
@requires("billing.write")
async def resume_subscription(request: web.Request) -> web.Response:
    """Resume a subscription set to cancel at period end."""
    row = await service.change_subscription(request.app[SERVICES], principal_of(request).workspace_id, resume=True)
    return reply(request, subscription_json(row), status=201)


@routes.post("/billing/webhook")
@returns(WebhookReceipt, description="Received (applied now, or before when duplicate)")
async def billing_webhook(request: web.Request) -> web.Response:
    """The payment provider's webhook: verified by its signature header, each event applied once."""
    applied = await service.receive_webhook(request.app[SERVICES], await request.read(), request.headers)
    return reply(request, {"received": True, "duplicate": not applied})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
