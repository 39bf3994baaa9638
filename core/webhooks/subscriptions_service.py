"""Outbound subscriptions: what may be subscribed to, and the work behind the subscription routes
(``core.webhooks.routes_subscriptions``).

The functions that take a session run in the caller's tenant session, so another workspace's
subscription is not found; one is also not found under another provider than its own. Those that
take the services open the workspace's own transaction around them. Secrets are given in plain
text and stored encrypted with the services' ``SecretBox``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.errors import Invalid, NotFound
from patchbay.core.outbound import Outbound, UnsafeTarget
from patchbay.core.plugins.provider import Provider
from patchbay.core.security.secrets import SecretBox
from patchbay.core.services import Services
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks.models import WebhookSubscription

#: patchbay's own events about a provider's connections, sent whether or not the provider has webhooks
CONNECTION_EVENTS = frozenset({"connection.created", "connection.reconnected", "connection.failed", "connection.removed"})


def check_events(provider: Provider, events: list[str]) -> list[str]:
    """``events`` when ``provider`` can send them; a provider that sends no webhooks has only the
    connection events to give (Invalid otherwise)."""
    if not provider.webhooks and not CONNECTION_EVENTS.issuperset(events):
        raise Invalid(
            f"Validation failed: {provider.name} sends no webhooks; a subscription to it can receive only connection events ({', '.join(sorted(CONNECTION_EVENTS))})"
        )
    return events


def check_url(outbound: Outbound, value: str, field: str) -> str:
    """``value``, stripped, when the deployment may send to it; Invalid naming ``field`` otherwise."""
    if not value.strip():
        raise Invalid(f"Validation failed: {field} must be a URL")
    try:
        return outbound.check(value.strip())
    except UnsafeTarget as error:
        raise Invalid(f"Validation failed: {field}: {error}") from None
    except ValueError:  # urlsplit's "Invalid IPv6 URL" ("http://[")
        raise Invalid(f"Validation failed: {field} must be a URL") from None


async def create_subscription(
    session: AsyncSession, box: SecretBox, *, provider: str, url: str, events: list[str], long_tail: bool, secret: str | None
) -> WebhookSubscription:
    """A new active subscription of the session's workspace; deliveries are signed when ``secret`` is given."""
    subscription = WebhookSubscription(provider=provider, url=url, events=events, long_tail=long_tail, secret=box.encrypt(secret) if secret else None)
    session.add(subscription)
    await session.flush()
    return subscription


async def list_subscriptions(session: AsyncSession, provider: str, *, include_disabled: bool) -> list[WebhookSubscription]:
    """The subscriptions to ``provider``'s events, oldest first: the active ones, or all of them."""
    statement = select(WebhookSubscription).where(WebhookSubscription.provider == provider).order_by(WebhookSubscription.created_at)
    if not include_disabled:
        statement = statement.where(WebhookSubscription.is_active.is_(True))
    return list((await session.scalars(statement)).all())


async def get_subscription(session: AsyncSession, provider: str, subscription_id: str) -> WebhookSubscription:
    """The subscription to ``provider``, or NotFound."""
    subscription = await session.get(WebhookSubscription, subscription_id)
    if subscription is None or subscription.provider != provider:
        raise NotFound("Subscription not found")
    return subscription


async def delete_subscription(session: AsyncSession, provider: str, subscription_id: str) -> None:
    """Delete the subscription (NotFound when there is none); its pending deliveries stop."""
    await session.delete(await get_subscription(session, provider, subscription_id))


async def update_subscription(
    session: AsyncSession,
    provider: str,
    subscription_id: str,
    *,
    url: str | None = None,
    events: list[str] | None = None,
    long_tail: bool | None = None,
    is_active: bool | None = None,
) -> WebhookSubscription:
    """Change what is given (None: unchanged). ``is_active`` True re-enables a disabled subscription
    and forgets why it was disabled and since when it failed; False disables it by the workspace."""
    subscription = await get_subscription(session, provider, subscription_id)
    if url is not None:
        subscription.url = url
    if events is not None:
        subscription.events = events
    if long_tail is not None:
        subscription.long_tail = long_tail
    if is_active is True and not subscription.is_active:
        subscription.is_active, subscription.disabled_at, subscription.disabled_reason, subscription.failing_since = True, None, None, None
    elif is_active is False:
        subscription.is_active, subscription.disabled_at, subscription.disabled_reason = False, utcnow(), "disabled by the workspace"
    return subscription


async def rotate_secret(
    session: AsyncSession, box: SecretBox, provider: str, subscription_id: str, *, new_secret: str, overlap_seconds: int
) -> WebhookSubscription:
    """Sign with ``new_secret`` from now on; the current secret (if any) keeps signing beside it for
    ``overlap_seconds`` (0: it stops at once)."""
    subscription = await get_subscription(session, provider, subscription_id)
    if subscription.secret and overlap_seconds > 0:
        subscription.previous_secret = subscription.secret
        subscription.previous_secret_expires_at = utcnow() + timedelta(seconds=overlap_seconds)
    else:
        subscription.previous_secret, subscription.previous_secret_expires_at = None, None
    subscription.secret = box.encrypt(new_secret)
    return subscription


# -- in the workspace's own transaction (the routes' entry points) ---------------------------------


async def subscribe(
    services: Services, workspace_id: str, *, provider: str, url: str, events: list[str], long_tail: bool, secret: str | None
) -> WebhookSubscription:
    """:func:`create_subscription` in the workspace's transaction."""
    async with services.db.transaction(tenant=workspace_id) as session:
        return await create_subscription(session, services.secrets, provider=provider, url=url, events=events, long_tail=long_tail, secret=secret)


async def subscriptions_of(services: Services, workspace_id: str, provider: str, *, include_disabled: bool) -> list[WebhookSubscription]:
    """:func:`list_subscriptions` of the workspace."""
    async with services.db.session(tenant=workspace_id) as session:
        return await list_subscriptions(session, provider, include_disabled=include_disabled)


async def every_subscription(services: Services, workspace_id: str) -> list[WebhookSubscription]:
    """The workspace's subscriptions to every provider, disabled ones too, oldest first (the console)."""
    async with services.db.session(tenant=workspace_id) as session:
        return list((await session.scalars(select(WebhookSubscription).order_by(WebhookSubscription.created_at, WebhookSubscription.id))).all())


async def subscription_by_id(services: Services, workspace_id: str, subscription_id: str) -> WebhookSubscription:
    """The workspace's subscription ``subscription_id``, whatever its provider; NotFound."""
    async with services.db.session(tenant=workspace_id) as session:
        subscription = await session.get(WebhookSubscription, subscription_id)
        if subscription is None:
            raise NotFound("Subscription not found")
        return subscription


async def unsubscribe(services: Services, workspace_id: str, provider: str, subscription_id: str) -> None:
    """:func:`delete_subscription` in the workspace's transaction."""
    async with services.db.transaction(tenant=workspace_id) as session:
        await delete_subscription(session, provider, subscription_id)


async def change(services: Services, workspace_id: str, provider: str, subscription_id: str, **changes: Any) -> WebhookSubscription:
    """:func:`update_subscription` in the workspace's transaction."""
    async with services.db.transaction(tenant=workspace_id) as session:
        return await update_subscription(session, provider, subscription_id, **changes)


async def rotate(
    services: Services, workspace_id: str, provider: str, subscription_id: str, *, new_secret: str, overlap_seconds: int | None
) -> WebhookSubscription:
    """:func:`rotate_secret` in the workspace's transaction; ``overlap_seconds`` None is the
    deployment's overlap (``webhooks.secret_overlap_hours``), a negative one Invalid."""
    overlap = services.settings.webhooks.secret_overlap_hours * 3600 if overlap_seconds is None else overlap_seconds
    if overlap < 0:
        raise Invalid("Validation failed: overlapSeconds must be a whole number of seconds")
    async with services.db.transaction(tenant=workspace_id) as session:
        return await rotate_secret(session, services.secrets, provider, subscription_id, new_secret=new_secret, overlap_seconds=overlap)
