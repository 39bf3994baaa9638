"""Billing through the payment-provider plugin: which provider serves, the workspace's plan, usage
and subscription, changes of the subscription, and applying verified webhook events exactly once.

Refusals are domain errors: no configured provider (400), no subscription to change (404), a
subscription already there or not set to cancel (409), a provider that fails (502)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.billing.limits import MONTHLY_RESOURCES, RESOURCES, limits_of, workspace_plan
from patchbay.core.billing.models import PaymentEvent as EventRow
from patchbay.core.billing.models import Subscription, UsageCounter
from patchbay.core.billing.payments import (
    PAID_PLANS,
    CheckoutRequest,
    CheckoutSession,
    PaymentContext,
    PaymentEvent,
    PaymentProvider,
    PaymentProviderError,
    SubscriptionState,
    WebhookVerificationError,
)
from patchbay.core.errors import Conflict, Invalid, NotFound, UpstreamFailed
from patchbay.core.users.models import User
from patchbay.core.workspaces.models import Workspace

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: subscription statuses that keep the paid plan (past_due: Stripe is still retrying the payment)
PAID_STATUSES = ("active", "trialing", "past_due")
#: statuses that end the paid plan; others (incomplete: a payment still pending) leave it as it is
ENDED_STATUSES = ("canceled", "unpaid", "incomplete_expired", "paused")


def payment_context(services: Services, name: str) -> PaymentContext:
    return PaymentContext(http=services.outbound.session, config=services.registry.plugin_settings(name), base_url=services.settings.public_base_url)


def active_provider(services: Services) -> tuple[str, PaymentProvider, PaymentContext] | None:
    """The first registered payment provider that is configured, with its context; None when billing
    runs without one (plans set through the CLI or the accounts API)."""
    for name, provider in sorted(services.registry.objects("payment_providers").items()):
        ctx = payment_context(services, name)
        if provider.configured(ctx):
            return name, provider, ctx
    return None


def _provider_or_refuse(services: Services) -> tuple[str, PaymentProvider, PaymentContext]:
    active = active_provider(services)
    if active is None:
        raise Invalid("No payment provider is configured; the plan is set by the operator")
    return active


def _upstream(error: PaymentProviderError) -> UpstreamFailed:
    return UpstreamFailed(f"Payment provider error: {error}")


async def plan_of(services: Services, workspace_id: str) -> tuple[str, dict[str, int | None], Subscription | None, str | None, list[str]]:
    """The workspace's plan, its limits, its subscription, the serving payment provider's name and
    the paid plans it has a price for."""
    limits = limits_of(services)
    async with services.db.session(tenant=workspace_id) as session:
        plan = await workspace_plan(session, workspace_id)
        subscription = await subscription_of(session, workspace_id)
    active = active_provider(services)
    available = [p for p in PAID_PLANS if active and active[1].price_configured(active[2], p)]
    return plan, {resource: limits.limit(plan, resource) for resource in RESOURCES}, subscription, active[0] if active else None, available


async def usage_of(services: Services, workspace_id: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """The workspace's plan and this month's usage of every limited resource with the plan's limit."""
    limits = limits_of(services)
    async with services.db.session(tenant=workspace_id) as session:
        plan = await workspace_plan(session, workspace_id)
        usage = {}
        for resource in RESOURCES:
            used = await limits.current(session, workspace_id, resource)
            usage[resource] = {"used": used, "limit": limits.limit(plan, resource), "period": "month" if resource in MONTHLY_RESOURCES else "total"}
    return plan, usage


async def usage_by_month(services: Services, workspace_id: str, months: int) -> list[dict[str, Any]]:
    """The metered usage of the latest ``months`` months with any, newest first."""
    async with services.db.session(tenant=workspace_id) as session:
        rows = await usage_history(session)
    periods: dict[str, dict[str, int]] = {}
    for row in rows:
        periods.setdefault(row.period, {metric: 0 for metric in MONTHLY_RESOURCES})[row.metric] = row.count
    return [{"period": period, "usage": usage} for period, usage in list(periods.items())[:months]]


async def start_checkout(
    services: Services, *, workspace_id: str, user_id: str | None, plan: str, success_url: str | None, cancel_url: str | None
) -> tuple[str, CheckoutSession]:
    """Start a checkout of a paid plan with the serving provider; ``(provider name, its session)``.
    ``user_id``: the signed-in user whose email the checkout is prefilled with."""
    name, provider, ctx = _provider_or_refuse(services)
    if plan not in PAID_PLANS or not provider.price_configured(ctx, plan):
        raise Invalid(
            f"Validation failed: plan must be one of {', '.join(p for p in PAID_PLANS if provider.price_configured(ctx, p)) or 'the configured plans'}"
        )
    for url in (success_url, cancel_url):
        if url is not None and not url.startswith(("https://", "http://")):
            raise Invalid("Validation failed: successUrl and cancelUrl must be http(s) URLs")
    async with services.db.session(tenant=workspace_id) as session:
        subscription = await subscription_of(session, workspace_id)
        email = await user_email(session, user_id) if user_id else None
    if subscription is not None and subscription.status in PAID_STATUSES and subscription.subscription_id:
        raise Conflict("The workspace already has a subscription; manage it in the billing portal")
    checkout = CheckoutRequest(
        workspace_id=workspace_id,
        plan=plan,
        success_url=success_url or f"{ctx.base_url}/?checkout=success",
        cancel_url=cancel_url or f"{ctx.base_url}/?checkout=cancelled",
        customer_id=subscription.customer_id if subscription is not None else None,
        customer_email=email,
    )
    try:
        return name, await provider.create_checkout(ctx, checkout)
    except PaymentProviderError as error:
        raise _upstream(error) from None


async def open_portal(services: Services, workspace_id: str, *, return_url: str | None) -> str:
    """The URL of a customer-portal session of the workspace's billing customer."""
    _, provider, ctx = _provider_or_refuse(services)
    async with services.db.session(tenant=workspace_id) as session:
        subscription = await subscription_of(session, workspace_id)
    if subscription is None or not subscription.customer_id:
        raise Invalid("The workspace has no billing customer yet; start with a checkout")
    try:
        return await provider.create_portal(ctx, customer_id=subscription.customer_id, return_url=return_url or ctx.base_url)
    except PaymentProviderError as error:
        raise _upstream(error) from None


async def change_subscription(services: Services, workspace_id: str, *, resume: bool) -> Subscription:
    """Cancel the paid subscription at the end of its period, or ``resume`` one set to cancel; the
    provider's answer is stored."""
    _, provider, ctx = _provider_or_refuse(services)
    async with services.db.session(tenant=workspace_id) as session:
        subscription = await subscription_of(session, workspace_id)
    if subscription is None or not subscription.subscription_id or subscription.status not in PAID_STATUSES:
        raise NotFound("No active subscription")
    if resume and not subscription.cancel_at_period_end:
        raise Conflict("The subscription is not set to cancel")
    try:
        change = provider.resume_subscription if resume else provider.cancel_subscription
        state = await change(ctx, subscription_id=subscription.subscription_id)
    except PaymentProviderError as error:
        raise _upstream(error) from None
    async with services.db.transaction(tenant=workspace_id) as session:
        return await record_state(session, workspace_id, state)


async def receive_webhook(services: Services, payload: bytes, headers: Mapping[str, str]) -> bool:
    """Verify a webhook of the serving provider (its signature header among ``headers``) and apply
    its event once; False when the event was applied before (a replay)."""
    active = active_provider(services)
    if active is None:
        raise NotFound("No payment provider is configured")
    name, provider, ctx = active
    try:
        event = provider.parse_webhook(ctx, payload=payload, signature=headers.get(provider.signature_header))
    except WebhookVerificationError as error:
        raise Invalid(str(error)) from None
    return await apply_event(services, name, event)


async def subscription_of(session: AsyncSession, workspace_id: str) -> Subscription | None:
    return await session.scalar(select(Subscription).where(Subscription.workspace_id == workspace_id))


async def usage_history(session: AsyncSession) -> list[UsageCounter]:
    """The session workspace's monthly counters, newest month first."""
    return list((await session.scalars(select(UsageCounter).order_by(UsageCounter.period.desc(), UsageCounter.metric))).all())


async def user_email(session: AsyncSession, user_id: str) -> str | None:
    return await session.scalar(select(User.email).where(User.id == user_id))


def store_state(row: Subscription, state: SubscriptionState) -> None:
    row.subscription_id = state.subscription_id
    row.customer_id = state.customer_id or row.customer_id
    row.status = state.status
    row.plan = state.plan or row.plan
    row.cancel_at_period_end = state.cancel_at_period_end
    row.current_period_end = state.current_period_end or row.current_period_end


async def record_state(session: AsyncSession, workspace_id: str, state: SubscriptionState) -> Subscription:
    """Store what the payment provider answered a change of the workspace's subscription with."""
    row = await subscription_of(session, workspace_id)
    store_state(row, state)
    await session.flush()
    return row


async def _workspace_for(session: AsyncSession, provider: str, event: PaymentEvent) -> Workspace | None:
    if event.workspace_id:
        workspace = await session.get(Workspace, event.workspace_id)
        if workspace is not None:
            return workspace
    keys = []
    if event.subscription is not None:
        keys.append(Subscription.subscription_id == event.subscription.subscription_id)
    if event.customer_id:
        keys.append(Subscription.customer_id == event.customer_id)
    if not keys:
        return None
    row = await session.scalar(select(Subscription).where(Subscription.provider == provider, or_(*keys)).limit(1))
    return await session.get(Workspace, row.workspace_id) if row is not None else None


async def apply_event(services: Services, provider: str, event: PaymentEvent) -> bool:
    """Apply a verified event once; False when this event id was handled before (a replay)."""
    try:
        async with services.db.transaction() as session:
            workspace = await _workspace_for(session, provider, event)
            session.add(
                EventRow(
                    provider=provider, event_id=event.id, event_type=event.type, workspace_id=workspace.id if workspace else None, data={"kind": event.kind}
                )
            )
            await session.flush()  # a replay stops here on the unique (provider, event_id)
            if workspace is None or event.kind == "other":
                return True
            row = await subscription_of(session, workspace.id)
            if row is None:
                row = Subscription(workspace_id=workspace.id, provider=provider)
                session.add(row)
            row.provider = provider
            if event.customer_id:
                row.customer_id = event.customer_id
            if event.subscription is not None:
                store_state(row, event.subscription)
            if event.kind == "checkout_completed" and event.plan:
                row.plan = event.plan
                workspace.plan = event.plan
            elif event.kind == "subscription_updated" and event.subscription is not None:
                if event.subscription.status in PAID_STATUSES and event.subscription.plan:
                    workspace.plan = event.subscription.plan
                elif event.subscription.status in ENDED_STATUSES:
                    workspace.plan = "free"
            elif event.kind == "subscription_deleted":
                row.status = event.subscription.status if event.subscription else "canceled"
                workspace.plan = "free"
            return True
    except IntegrityError:
        return False
