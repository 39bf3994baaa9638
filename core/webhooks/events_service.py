"""The queries behind the event log routes (``core.webhooks.routes_events``): a workspace's inbound
events, their deliveries with every attempt, and manual redelivery.

The functions that take a session run in the caller's tenant session, so another workspace's rows
are not found; those that take the services open the workspace's own session around them.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.errors import Conflict, Invalid, NotFound
from patchbay.core.jobs.queue import JobQueue
from patchbay.core.services import Services
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks.delivery import create_deliveries
from patchbay.core.webhooks.models import EVENT_STATUSES, WebhookAttempt, WebhookDelivery, WebhookEvent, WebhookSubscription

T = TypeVar("T")


async def _get(session: AsyncSession, model: type[T], row_id: str, message: str) -> T:
    row = await session.get(model, row_id)
    if row is None:
        raise NotFound(message)
    return row


async def _page(session: AsyncSession, model: type[T], filters: tuple[tuple[Any, str | None], ...], page: int, limit: int) -> tuple[list[T], int]:
    """One page of ``model``'s rows, newest first, and how many there are; ``filters`` pairs a
    column with the value it must equal, a pair whose value is None or empty being left out."""
    conditions = [column == value for column, value in filters if value]
    total = await session.scalar(select(func.count()).select_from(model).where(*conditions))
    statement = select(model).where(*conditions).order_by(model.created_at.desc(), model.id).offset((page - 1) * limit).limit(limit)
    return list((await session.scalars(statement)).all()), int(total or 0)


async def event_page(
    session: AsyncSession, *, provider: str | None, event_type: str | None, status: str | None, page: int, limit: int
) -> tuple[list[WebhookEvent], int]:
    """A page of the workspace's events, newest first, and how many match; a filter left as None
    (or empty) is not applied. ``status`` is one of ``EVENT_STATUSES``."""
    filters = ((WebhookEvent.provider, provider), (WebhookEvent.event_type, event_type), (WebhookEvent.status, status))
    return await _page(session, WebhookEvent, filters, page, limit)


async def get_event(session: AsyncSession, event_id: str) -> WebhookEvent:
    """The event, or NotFound ("Event not found")."""
    return await _get(session, WebhookEvent, event_id, "Event not found")


async def deliveries_of(session: AsyncSession, event_id: str) -> list[WebhookDelivery]:
    """The event's deliveries, oldest first."""
    statement = select(WebhookDelivery).where(WebhookDelivery.event_id == event_id).order_by(WebhookDelivery.created_at)
    return list((await session.scalars(statement)).all())


async def delivery_page(
    session: AsyncSession, *, event_id: str | None, subscription_id: str | None, status: str | None, page: int, limit: int
) -> tuple[list[WebhookDelivery], int]:
    """A page of the workspace's deliveries, newest first, and how many match; a filter left as
    None (or empty) is not applied."""
    filters = ((WebhookDelivery.event_id, event_id), (WebhookDelivery.subscription_id, subscription_id), (WebhookDelivery.status, status))
    return await _page(session, WebhookDelivery, filters, page, limit)


async def get_delivery(session: AsyncSession, delivery_id: str) -> WebhookDelivery:
    """The delivery, or NotFound ("Delivery not found")."""
    return await _get(session, WebhookDelivery, delivery_id, "Delivery not found")


async def attempts_by_delivery(session: AsyncSession, delivery_ids: list[str]) -> dict[str, list[WebhookAttempt]]:
    """The attempts of each delivery (every id a key), in the order they were made."""
    found: dict[str, list[WebhookAttempt]] = {d: [] for d in delivery_ids}
    if delivery_ids:
        statement = select(WebhookAttempt).where(WebhookAttempt.delivery_id.in_(delivery_ids)).order_by(WebhookAttempt.number)
        for row in (await session.scalars(statement)).all():
            found[row.delivery_id].append(row)
    return found


async def redeliver(jobs: JobQueue, session: AsyncSession, event_id: str, *, subscription_id: str | None) -> tuple[WebhookEvent, list[WebhookDelivery]]:
    """Queue the event again to its matching active subscriptions (or to ``subscription_id`` only),
    as manual deliveries sending the bytes of the event's first delivery (under the same id), or the
    event serialized now when it had none. NotFound for an unknown event, or when
    ``subscription_id`` names no active subscription of the workspace; Conflict while the event is
    not processed yet. Needs a transaction."""
    event = await get_event(session, event_id)
    if event.status == "RECEIVED":
        raise Conflict("The event has not been processed yet")
    sent = select(WebhookDelivery.body).where(WebhookDelivery.event_id == event.id, WebhookDelivery.body.is_not(None))
    body = await session.scalar(sent.order_by(WebhookDelivery.created_at).limit(1))
    deliveries = await create_deliveries(jobs, session, event, subscription_id=subscription_id, manual=True, body=body)
    if subscription_id is not None and not deliveries:
        raise NotFound("Subscription not found or not active")
    return event, deliveries


# -- in the workspace's own session (the routes' entry points) -------------------------------------

Attempts = dict[str, list[WebhookAttempt]]


def event_status(value: str | None) -> str | None:
    """The ``status`` filter of the event log in its canonical case (either case is accepted);
    Invalid when it is not an event status."""
    if value is None:
        return None
    status = value.upper()
    if status not in EVENT_STATUSES:
        raise Invalid(f"Query parameter 'status' must be one of {', '.join(EVENT_STATUSES)}")
    return status


async def events_of(
    services: Services, workspace_id: str, *, provider: str | None, event_type: str | None, status: str | None, page: int, limit: int
) -> tuple[list[WebhookEvent], int]:
    """:func:`event_page` of the workspace; ``status`` in either case (:func:`event_status`)."""
    status = event_status(status)
    async with services.db.session(tenant=workspace_id) as session:
        return await event_page(session, provider=provider, event_type=event_type, status=status, page=page, limit=limit)


async def event_with_deliveries(services: Services, workspace_id: str, event_id: str) -> tuple[WebhookEvent, list[WebhookDelivery], Attempts]:
    """The workspace's event, its deliveries (oldest first) and their attempts; NotFound."""
    async with services.db.session(tenant=workspace_id) as session:
        event = await get_event(session, event_id)
        deliveries = await deliveries_of(session, event.id)
        return event, deliveries, await attempts_by_delivery(session, [d.id for d in deliveries])


async def deliveries_with_attempts(
    services: Services, workspace_id: str, *, event_id: str | None, subscription_id: str | None, status: str | None, page: int, limit: int
) -> tuple[list[WebhookDelivery], int, Attempts]:
    """:func:`delivery_page` of the workspace, with the attempts of the page's deliveries."""
    async with services.db.session(tenant=workspace_id) as session:
        rows, total = await delivery_page(session, event_id=event_id, subscription_id=subscription_id, status=status, page=page, limit=limit)
        return rows, total, await attempts_by_delivery(session, [d.id for d in rows])


async def delivery_with_attempts(services: Services, workspace_id: str, delivery_id: str) -> tuple[WebhookDelivery, list[WebhookAttempt]]:
    """The workspace's delivery and its attempts, oldest first; NotFound."""
    async with services.db.session(tenant=workspace_id) as session:
        delivery = await get_delivery(session, delivery_id)
        return delivery, (await attempts_by_delivery(session, [delivery.id]))[delivery.id]


async def redeliver_event(services: Services, workspace_id: str, event_id: str, *, subscription_id: str | None) -> tuple[WebhookEvent, list[WebhookDelivery]]:
    """:func:`redeliver` in the workspace's transaction."""
    async with services.db.transaction(tenant=workspace_id) as session:
        return await redeliver(services.jobs, session, event_id, subscription_id=subscription_id)


#: the event type of a test event (the console's "send a test event")
TEST_EVENT = "webhook.test"


async def send_test_event(services: Services, workspace_id: str, subscription_id: str) -> tuple[WebhookEvent, WebhookDelivery]:
    """Queue a test event (``webhook.test``, a small payload saying so) to one active subscription of
    the workspace, delivered, signed and retried as any event; it is kept in the event log.
    NotFound for another workspace's or an unknown subscription, Conflict for a disabled one."""
    async with services.db.transaction(tenant=workspace_id) as session:
        subscription = await _get(session, WebhookSubscription, subscription_id, "Subscription not found")
        if not subscription.is_active:
            raise Conflict("The subscription is disabled: enable it to send a test event")
        now = utcnow()
        payload = {"test": True, "message": "A test event sent from the console", "subscriptionId": subscription.id}
        event = WebhookEvent(
            workspace_id=workspace_id, provider=subscription.provider, status="PROCESSED", event_type=TEST_EVENT, payload=payload, processed_at=now
        )
        session.add(event)
        await session.flush()
        (delivery,) = await create_deliveries(services.jobs, session, event, subscription_id=subscription.id, manual=True)
        return event, delivery


async def failing_deliveries(services: Services, workspace_id: str, *, limit: int) -> tuple[list[WebhookDelivery], int]:
    """The workspace's deliveries that failed for good or are retrying after a failed attempt,
    most recent first, at most ``limit``, and how many there are (the console's home)."""
    failing = (WebhookDelivery.status == "failed") | ((WebhookDelivery.status == "pending") & (WebhookDelivery.attempts > 0))
    async with services.db.session(tenant=workspace_id) as session:
        total = await session.scalar(select(func.count()).select_from(WebhookDelivery).where(failing))
        rows = await session.scalars(select(WebhookDelivery).where(failing).order_by(WebhookDelivery.updated_at.desc(), WebhookDelivery.id).limit(limit))
        return list(rows), int(total or 0)
