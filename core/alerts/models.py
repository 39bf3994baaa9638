"""Alert subscriptions: who hears about a flow execution's success or failure (spec 2.9) and about
the operator events of ``operator_events`` (a connection refused for good, a webhook subscription
disabled, a job kind failing repeatedly)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Boolean, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TenantScoped, TimestampMixin

FLOW_EVENT_TYPES = ("flow.failed", "flow.succeeded")
OPERATOR_EVENT_TYPES = ("connection.invalid", "webhook.subscription_disabled", "jobs.failing", "agent.approval_requested")
EVENT_TYPES = FLOW_EVENT_TYPES + OPERATOR_EVENT_TYPES


class AlertSubscription(IdMixin, TimestampMixin, TenantScoped, Base):
    __tablename__ = "alert_subscriptions"

    channel: Mapped[str] = mapped_column(String(50))
    target: Mapped[str] = mapped_column(Text)
    event_types: Mapped[list[Any]] = mapped_column(default=list)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
