"""Billing routes (spec 4.16): the workspace's plan and limits, metered usage, and its subscription
with the payment provider (checkout, portal, cancel at period end, resume, webhook).

Without a configured payment provider the read routes work and the others answer 400; the plan is
then set through the CLI or the accounts API.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from patchbay.core.appkeys import DB
from patchbay.core.billing import service
from patchbay.core.billing.api_models import (
    BillingPlan, BillingSubscription, BillingUsage, CheckoutDto, CheckoutSession, PortalDto, PortalSession, UsageHistory, WebhookReceipt,
    subscription_json,
)  # fmt: skip
from patchbay.core.billing.limits import MONTHLY_RESOURCES, RESOURCES, current_period, limits_of, workspace_plan
from patchbay.core.billing.payments import PAID_PLANS, CheckoutRequest, PaymentProviderError, WebhookVerificationError
from patchbay.core.http.bodies import query_int, read_body
from patchbay.core.http.errors import ApiError, bad_request, conflict, not_found
from patchbay.core.http.openapi import accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


def _provider_or_400(app: web.Application):
    active = service.active_provider(app)
    if active is None:
        raise bad_request("No payment provider is configured; the plan is set by the operator")
    return active


def _upstream(error: PaymentProviderError) -> ApiError:
    return ApiError(502, f"Payment provider error: {error}")


@routes.get("/connect/v1/billing/plan")
@returns(BillingPlan)
@requires("billing.view")
async def get_plan(request: web.Request) -> web.Response:
    """The workspace's plan, its limits and its subscription."""
    workspace_id = principal_of(request).workspace_id
    limits = limits_of(request.app)
    async with request.app[DB].session(tenant=workspace_id) as session:
        plan = await workspace_plan(session, workspace_id)
        subscription = await service.subscription_of(session, workspace_id)
    active = service.active_provider(request.app)
    return reply(
        request,
        {
            "plan": plan,
            "limits": {resource: limits.limit(plan, resource) for resource in RESOURCES},
            "subscription": subscription_json(subscription),
            "paymentProvider": active[0] if active else None,
            "availablePlans": [p for p in PAID_PLANS if active and active[1].price_configured(active[2], p)],
        },
    )


@routes.get("/connect/v1/billing/usage")
@returns(BillingUsage)
@requires("billing.view")
async def get_usage(request: web.Request) -> web.Response:
    """This month's usage of every limited resource, with the plan's limit (null: unlimited)."""
    workspace_id = principal_of(request).workspace_id
    limits = limits_of(request.app)
    async with request.app[DB].session(tenant=workspace_id) as session:
        plan = await workspace_plan(session, workspace_id)
        usage = {}
        for resource in RESOURCES:
            used = await limits.current(session, workspace_id, resource)
            usage[resource] = {"used": used, "limit": limits.limit(plan, resource), "period": "month" if resource in MONTHLY_RESOURCES else "total"}
    return reply(request, {"period": current_period(), "plan": plan, "usage": usage})


@routes.get("/connect/v1/billing/usage/history")
@query(months={"type": "integer", "minimum": 1, "maximum": 120, "default": 12})
@returns(UsageHistory)
@requires("billing.view")
async def get_usage_history(request: web.Request) -> web.Response:
    """Metered usage per month, newest first (``?months=``, default 12, at most 120)."""
    workspace_id = principal_of(request).workspace_id
    months = query_int(request, "months", 12, maximum=120)
    async with request.app[DB].session(tenant=workspace_id) as session:
        rows = await service.usage_history(session)
    periods: dict[str, dict[str, int]] = {}
    for row in rows:
        periods.setdefault(row.period, {metric: 0 for metric in MONTHLY_RESOURCES})[row.metric] = row.count
    data = [{"period": period, "usage": usage} for period, usage in list(periods.items())[:months]]
    return reply(request, {"data": data})


@routes.post("/connect/v1/billing/checkout")
@accepts(CheckoutDto)
@returns(CheckoutSession, status=201, description="Checkout started")
@requires("billing.write")
async def create_checkout(request: web.Request) -> web.Response:
    """Start a checkout of a paid plan (``{plan, successUrl?, cancelUrl?}``); answers ``{url, id}``."""
    principal = principal_of(request)
    body = await read_body(request, CheckoutDto)
    name, provider, ctx = _provider_or_400(request.app)
    if body.plan not in PAID_PLANS or not provider.price_configured(ctx, body.plan):
        raise bad_request(f"Validation failed: plan must be one of {', '.join(p for p in PAID_PLANS if provider.price_configured(ctx, p)) or 'the configured plans'}")
    for url in (body.successUrl, body.cancelUrl):
        if url is not None and not url.startswith(("https://", "http://")):
            raise bad_request("Validation failed: successUrl and cancelUrl must be http(s) URLs")
    async with request.app[DB].session(tenant=principal.workspace_id) as session:
        subscription = await service.subscription_of(session, principal.workspace_id)
        email = None
        if principal.kind == "access_token" and principal.subject:
            email = await service.user_email(session, principal.subject)
    if subscription is not None and subscription.status in service.PAID_STATUSES and subscription.subscription_id:
        raise conflict("The workspace already has a subscription; manage it in the billing portal")
    base = ctx.base_url
    checkout = CheckoutRequest(
        workspace_id=principal.workspace_id,
        plan=body.plan,
        success_url=body.successUrl or f"{base}/?checkout=success",
        cancel_url=body.cancelUrl or f"{base}/?checkout=cancelled",
        customer_id=subscription.customer_id if subscription is not None else None,
        customer_email=email,
    )
    try:
        session_ = await provider.create_checkout(ctx, checkout)
    except PaymentProviderError as error:
        raise _upstream(error) from None
    return reply(request, {"id": session_.id, "url": session_.url, "provider": name}, status=201)


@routes.post("/connect/v1/billing/portal")
@accepts(PortalDto, required=False)
@returns(PortalSession, status=201, description="Portal session opened")
@requires("billing.write")
async def create_portal(request: web.Request) -> web.Response:
    """Open a customer-portal session (``{returnUrl?}``); answers ``{url}``."""
    workspace_id = principal_of(request).workspace_id
    body = await read_body(request, PortalDto) if (await request.read()).strip() else PortalDto()
    _, provider, ctx = _provider_or_400(request.app)
    async with request.app[DB].session(tenant=workspace_id) as session:
        subscription = await service.subscription_of(session, workspace_id)
    if subscription is None or not subscription.customer_id:
        raise bad_request("The workspace has no billing customer yet; start with a checkout")
    try:
        url = await provider.create_portal(ctx, customer_id=subscription.customer_id, return_url=body.returnUrl or ctx.base_url)
    except PaymentProviderError as error:
        raise _upstream(error) from None
    return reply(request, {"url": url}, status=201)


async def _change_subscription(request: web.Request, resume: bool) -> dict[str, Any]:
    workspace_id = principal_of(request).workspace_id
    _, provider, ctx = _provider_or_400(request.app)
    async with request.app[DB].session(tenant=workspace_id) as session:
        subscription = await service.subscription_of(session, workspace_id)
    if subscription is None or not subscription.subscription_id or subscription.status not in service.PAID_STATUSES:
        raise not_found("No active subscription")
    if resume and not subscription.cancel_at_period_end:
        raise conflict("The subscription is not set to cancel")
    try:
        change = provider.resume_subscription if resume else provider.cancel_subscription
        state = await change(ctx, subscription_id=subscription.subscription_id)
    except PaymentProviderError as error:
        raise _upstream(error) from None
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        return subscription_json(await service.record_state(session, workspace_id, state))


@routes.delete("/connect/v1/billing/subscription")
@returns(BillingSubscription)
@requires("billing.write")
async def cancel_subscription(request: web.Request) -> web.Response:
    """Cancel the subscription at the end of the current period."""
    return reply(request, await _change_subscription(request, resume=False))


@routes.post("/connect/v1/billing/subscription/resume")
@returns(BillingSubscription, status=201, description="Resumed")
@requires("billing.write")
async def resume_subscription(request: web.Request) -> web.Response:
    """Resume a subscription set to cancel at period end."""
    return reply(request, await _change_subscription(request, resume=True), status=201)


@routes.post("/billing/webhook")
@returns(WebhookReceipt, description="Received (applied now, or before when duplicate)")
async def billing_webhook(request: web.Request) -> web.Response:
    """The payment provider's webhook: verified by its signature header, each event applied once."""
    active = service.active_provider(request.app)
    if active is None:
        raise not_found("No payment provider is configured")
    name, provider, ctx = active
    payload = await request.read()
    try:
        event = provider.parse_webhook(ctx, payload=payload, signature=request.headers.get(provider.signature_header))
    except WebhookVerificationError as error:
        raise bad_request(str(error)) from None
    applied = await service.apply_event(request.app, name, event)
    return reply(request, {"received": True, "duplicate": not applied})


def setup(app: web.Application) -> None:
    limits_of(app)  # validates the [plans.<plan>] tables at start
    app.router.add_routes(routes)
