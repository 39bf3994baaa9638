"""Billing rows: monthly usage counters, the workspace's subscription with the payment provider, and
the payment provider's webhook events already handled (replays are answered once)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TenantScoped, TimestampMixin


class UsageCounter(IdMixin, TimestampMixin, TenantScoped, Base):
    """One row per workspace, metric and calendar month (UTC), upserted by ``record_usage``."""

    __tablename__ = "usage_counters"
    own_workspace_index = False  # an index or unique constraint of the table leads with workspace_id
    __table_args__ = (UniqueConstraint("workspace_id", "metric", "period"),)

    metric: Mapped[str] = mapped_column(String(50))
    #: ``YYYY-MM``
    period: Mapped[str] = mapped_column(String(7))
    count: Mapped[int] = mapped_column(BigInteger, default=0)


class Subscription(IdMixin, TimestampMixin, TenantScoped, Base):
    """The workspace's customer and subscription at the payment provider (at most one per workspace)."""

    __tablename__ = "billing_subscriptions"
    __table_args__ = (UniqueConstraint("workspace_id"),)

    provider: Mapped[str] = mapped_column(String(50))
    customer_id: Mapped[str | None] = mapped_column(String(200), index=True)
    subscription_id: Mapped[str | None] = mapped_column(String(200), index=True)
    plan: Mapped[str | None] = mapped_column(String(20))
    #: the provider's status: active, trialing, past_due, canceled, incomplete, ...
    status: Mapped[str | None] = mapped_column(String(40))
    cancel_at_period_end: Mapped[bool] = mapped_column(default=False)
    current_period_end: Mapped[datetime | None]


class PaymentEvent(IdMixin, TimestampMixin, Base):
    """A payment-provider webhook event handled once; a replay of the same event id is a no-op."""

    __tablename__ = "billing_events"
    __table_args__ = (UniqueConstraint("provider", "event_id"),)

    provider: Mapped[str] = mapped_column(String(50))
    event_id: Mapped[str] = mapped_column(String(200))
    event_type: Mapped[str] = mapped_column(String(100))
    workspace_id: Mapped[str | None] = mapped_column(String(36), index=True)
    data: Mapped[dict[str, Any]] = mapped_column(default=dict)
