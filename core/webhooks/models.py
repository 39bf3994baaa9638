"""Inbound events, outbound subscriptions, deliveries and their attempts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TenantScoped, TimestampMixin

#: Spec 2.13 / 3.3. RECEIVED: stored, not processed yet; PROCESSED: routed, handled, forwarded;
#: DUPLICATE: the same delivery or the same lead was seen before, nothing created or forwarded;
#: FAILED: ``reason`` says why (unroutable, bad payload, lead extraction failed).
EVENT_STATUSES = ("RECEIVED", "PROCESSED", "DUPLICATE", "FAILED")


class WebhookEvent(IdMixin, TimestampMixin, TenantScoped, Base):
    """One provider event. Stored with no workspace when received (routing happens after the 200);
    an event that matches no connection keeps no workspace, so no tenant ever sees it."""

    __tablename__ = "webhook_events"
    __table_args__ = (Index("ix_webhook_events_workspace_created", "workspace_id", "created_at"),)

    # Overrides TenantScoped's column: nullable until the event is routed (indexed by the composite
    # index above, as TenantScoped.own_workspace_index says).
    workspace_id: Mapped[str | None] = mapped_column(String(36), ForeignKey("workspaces.id", ondelete="CASCADE"))
    provider: Mapped[str] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(String(12), default="RECEIVED", index=True)
    event_type: Mapped[str | None] = mapped_column(String(100))
    reason: Mapped[str | None] = mapped_column(Text)
    #: the raw body as received (verified); the source of ``payload``
    body: Mapped[str | None] = mapped_column(Text)
    #: SHA-256 of provider + raw body: the same delivery received twice is a DUPLICATE
    body_hash: Mapped[str | None] = mapped_column(String(64), index=True)
    #: the event's data once extracted from the body
    payload: Mapped[dict[str, Any] | None]
    connection_hint: Mapped[str | None] = mapped_column(String(36))
    connection_id: Mapped[str | None] = mapped_column(String(36))
    #: a body carrying several events is split: the first stays here, the others point back
    parent_id: Mapped[str | None] = mapped_column(String(36), index=True)
    external_id: Mapped[str | None] = mapped_column(String(200))
    lead_id: Mapped[str | None] = mapped_column(String(36))
    processed_at: Mapped[datetime | None]


class WebhookSubscription(IdMixin, TimestampMixin, TenantScoped, Base):
    """A customer endpoint that receives a provider's events (4.4, 2.3)."""

    __tablename__ = "webhook_subscriptions"
    own_workspace_index = False  # an index or unique constraint of the table leads with workspace_id
    __table_args__ = (Index("ix_webhook_subscriptions_workspace_provider", "workspace_id", "provider"),)

    provider: Mapped[str] = mapped_column(String(100))
    url: Mapped[str] = mapped_column(Text)
    events: Mapped[list[Any]] = mapped_column(default=list)
    #: SecretBox-encrypted callbackSecret; None: deliveries are not signed
    secret: Mapped[str | None] = mapped_column(Text)
    #: the secret replaced by a rotation, still signing until ``previous_secret_expires_at``
    previous_secret: Mapped[str | None] = mapped_column(Text)
    previous_secret_expires_at: Mapped[datetime | None]
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    long_tail: Mapped[bool] = mapped_column(Boolean, default=False)
    failing_since: Mapped[datetime | None]
    disabled_at: Mapped[datetime | None]
    disabled_reason: Mapped[str | None] = mapped_column(Text)


#: pending: attempts left; succeeded: a 2xx; failed: attempts exhausted or subscription disabled;
#: gone: the receiver answered 410.
DELIVERY_STATUSES = ("pending", "succeeded", "failed", "gone")


class WebhookDelivery(IdMixin, TimestampMixin, TenantScoped, Base):
    """The forwarding of one event to one subscription; each try is a :class:`WebhookAttempt`."""

    __tablename__ = "webhook_deliveries"
    own_workspace_index = False  # an index or unique constraint of the table leads with workspace_id
    __table_args__ = (Index("ix_webhook_deliveries_workspace_created", "workspace_id", "created_at"),)

    event_id: Mapped[str] = mapped_column(String(36), index=True)
    subscription_id: Mapped[str] = mapped_column(String(36), index=True)
    status: Mapped[str] = mapped_column(String(10), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    next_attempt_at: Mapped[datetime | None]
    delivered_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    manual: Mapped[bool] = mapped_column(Boolean, default=False)
    #: the exact bytes every attempt sends (and signs), fixed when the delivery is created; None on
    #: a delivery queued by an earlier release, whose attempts serialize the stored event
    body: Mapped[bytes | None] = mapped_column(LargeBinary)


class WebhookAttempt(IdMixin, TimestampMixin, TenantScoped, Base):
    """One HTTP try of a delivery: status, duration, an excerpt of the answer or the error."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (UniqueConstraint("delivery_id", "number"),)

    delivery_id: Mapped[str] = mapped_column(String(36), index=True)
    number: Mapped[int] = mapped_column(Integer)
    status_code: Mapped[int | None] = mapped_column(Integer)
    duration_ms: Mapped[int] = mapped_column(Integer, default=0)
    response_excerpt: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)


class WebhookRegistration(IdMixin, TimestampMixin, TenantScoped, Base):
    """A connection's subscription at the provider (Meta's page subscription), renewed by the
    ``renew-webhook-subscriptions`` job before it expires."""

    __tablename__ = "webhook_registrations"

    connection_id: Mapped[str] = mapped_column(String(36), unique=True)
    provider: Mapped[str] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(String(10), default="active")
    renewed_at: Mapped[datetime | None]
    expires_at: Mapped[datetime | None]
    error: Mapped[str | None] = mapped_column(Text)
