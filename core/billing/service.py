"""Billing through the payment-provider plugin: which provider serves, the workspace's subscription,
and applying verified webhook events exactly once."""

from __future__ import annotations

from aiohttp import web
from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.appkeys import DB, OUTBOUND, REGISTRY, SETTINGS
from patchbay.core.billing.models import PaymentEvent as EventRow
from patchbay.core.billing.models import Subscription, UsageCounter
from patchbay.core.billing.payments import PaymentContext, PaymentEvent, PaymentProvider, SubscriptionState
from patchbay.core.users.models import User
from patchbay.core.workspaces.models import Workspace

#: subscription statuses that keep the paid plan (past_due: Stripe is still retrying the payment)
PAID_STATUSES = ("active", "trialing", "past_due")
#: statuses that end the paid plan; others (incomplete: a payment still pending) leave it as it is
ENDED_STATUSES = ("canceled", "unpaid", "incomplete_expired", "paused")


def payment_context(app: web.Application, name: str) -> PaymentContext:
    settings = app[SETTINGS]
    return PaymentContext(http=app[OUTBOUND].session, config=app[REGISTRY].plugin_settings(name), base_url=settings.public_base_url)


def active_provider(app: web.Application) -> tuple[str, PaymentProvider, PaymentContext] | None:
    """The first registered payment provider that is configured, with its context; None when billing
    runs without one (plans set through the CLI or the accounts API)."""
    for name, provider in sorted(app[REGISTRY].objects("payment_providers").items()):
        ctx = payment_context(app, name)
        if provider.configured(ctx):
            return name, provider, ctx
    return None


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


async def apply_event(app: web.Application, provider: str, event: PaymentEvent) -> bool:
    """Apply a verified event once; False when this event id was handled before (a replay)."""
    try:
        async with app[DB].transaction() as session:
            workspace = await _workspace_for(session, provider, event)
            session.add(EventRow(provider=provider, event_id=event.id, event_type=event.type, workspace_id=workspace.id if workspace else None, data={"kind": event.kind}))
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
