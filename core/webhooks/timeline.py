"""Inbound events and outbound deliveries as entries of the operations timeline
(``core.timeline``); a delivery's attempts are shown in its detail."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sqlalchemy import select

from patchbay.core.errors import NotFound
from patchbay.core.timeline import Entry, Query
from patchbay.core.webhooks.events_service import attempts_by_delivery
from patchbay.core.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEvent, WebhookSubscription

if TYPE_CHECKING:
    from patchbay.core.services import Services

EVENT_STATUS = {"ok": ("PROCESSED", "DUPLICATE"), "failed": ("FAILED",), "pending": ("RECEIVED",)}
DELIVERY_STATUS = {"ok": ("succeeded",), "failed": ("failed", "gone"), "pending": ("pending",)}


def _status(mapping: dict[str, tuple[str, ...]], value: str) -> str:
    return next((status for status, values in mapping.items() if value in values), "pending")


async def log_entries(services: Services, query: Query) -> list[Entry]:
    """The inbound events and deliveries the query asks for."""
    entries: list[Entry] = []
    if not (query.wants("inbound") or query.wants("delivery")):
        return entries
    async with services.db.session(tenant=query.workspace_id) as session:
        if query.wants("inbound"):
            conditions = query.filters(
                workspace=WebhookEvent.workspace_id,
                created=WebhookEvent.created_at,
                row_id=WebhookEvent.id,
                provider=WebhookEvent.provider,
                connection=WebhookEvent.connection_id,
                status=(WebhookEvent.status, EVENT_STATUS),
                search=(WebhookEvent.id, WebhookEvent.connection_id, WebhookEvent.external_id),
            )
            statement = select(WebhookEvent).where(*conditions).order_by(*query.order(WebhookEvent.created_at, WebhookEvent.id)).limit(query.limit)
            for event in await session.scalars(statement):
                entries.append(
                    Entry(
                        kind="inbound",
                        id=event.id,
                        at=event.created_at,
                        status=_status(EVENT_STATUS, event.status),
                        detail_status=event.status,
                        summary=(event.event_type or "event") + (f": {event.reason[:120]}" if event.reason else ""),
                        provider=event.provider,
                        connection_id=event.connection_id,
                    )
                )
        if query.wants("delivery"):
            conditions = query.filters(
                workspace=WebhookDelivery.workspace_id,
                created=WebhookDelivery.created_at,
                row_id=WebhookDelivery.id,
                provider=WebhookSubscription.provider,
                connection=WebhookEvent.connection_id,
                status=(WebhookDelivery.status, DELIVERY_STATUS),
                search=(WebhookDelivery.id, WebhookDelivery.event_id, WebhookDelivery.subscription_id),
            )
            statement = (
                select(WebhookDelivery, WebhookSubscription.provider, WebhookSubscription.url, WebhookEvent.connection_id, WebhookEvent.event_type)
                .outerjoin(WebhookSubscription, WebhookSubscription.id == WebhookDelivery.subscription_id)
                .outerjoin(WebhookEvent, WebhookEvent.id == WebhookDelivery.event_id)
                .where(*conditions)
                .order_by(*query.order(WebhookDelivery.created_at, WebhookDelivery.id))
                .limit(query.limit)
            )
            for delivery, provider, url, connection_id, event_type in (await session.execute(statement)).all():
                code = f" → {delivery.last_status_code}" if delivery.last_status_code is not None else ""
                entries.append(
                    Entry(
                        kind="delivery",
                        id=delivery.id,
                        at=delivery.created_at,
                        status=_status(DELIVERY_STATUS, delivery.status),
                        detail_status=delivery.status,
                        summary=f"{event_type or 'event'} to {urlsplit(url).netloc if url else 'a removed endpoint'}{code}, {delivery.attempts} attempt(s)"
                        + (" (manual)" if delivery.manual else ""),
                        provider=provider,
                        connection_id=connection_id,
                    )
                )
    return entries


async def delivery_detail(
    services: Services, *, workspace_id: str, delivery_id: str
) -> tuple[WebhookDelivery, list[WebhookAttempt], WebhookSubscription | None, WebhookEvent | None]:
    """The workspace's delivery, its attempts (in order), its subscription and its event; NotFound."""
    async with services.db.session(tenant=workspace_id) as session:
        delivery = await session.scalar(select(WebhookDelivery).where(WebhookDelivery.id == delivery_id, WebhookDelivery.workspace_id == workspace_id))
        if delivery is None:
            raise NotFound("Delivery not found")
        attempts = (await attempts_by_delivery(session, [delivery.id]))[delivery.id]
        subscription = await session.scalar(select(WebhookSubscription).where(WebhookSubscription.id == delivery.subscription_id))
        event = await session.scalar(select(WebhookEvent).where(WebhookEvent.id == delivery.event_id))
        return delivery, attempts, subscription, event
