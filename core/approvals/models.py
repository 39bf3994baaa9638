"""Approval policies and approval requests of integration connects (spec 4.17)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TenantScoped, TimestampMixin

#: pending: waiting for an approver; approving: an approver's decision is being carried out;
#: approved: decided (API-key credentials: the connection was made; OAuth: the requester may connect);
#: completed: an approved OAuth request whose connect has happened; denied: refused.
REQUEST_STATUSES = ("pending", "approving", "approved", "completed", "denied")


class ApprovalPolicy(IdMixin, TimestampMixin, TenantScoped, Base):
    """Which providers (by name or category) need approval before a member connects them, and who
    approves (roles of the workspace and named users)."""

    __tablename__ = "approval_policies"
    __table_args__ = (UniqueConstraint("workspace_id"),)

    enabled: Mapped[bool] = mapped_column(default=False)
    providers: Mapped[list[Any]] = mapped_column(default=list)
    categories: Mapped[list[Any]] = mapped_column(default=list)
    approver_roles: Mapped[list[Any]] = mapped_column(default=lambda: ["admin"])
    approver_user_ids: Mapped[list[Any]] = mapped_column(default=list)
    updated_by: Mapped[str | None] = mapped_column(String(200))


class ApprovalRequest(IdMixin, TimestampMixin, TenantScoped, Base):
    __tablename__ = "approval_requests"

    provider: Mapped[str] = mapped_column(String(100))
    #: api_key: the credentials wait here (encrypted) and approval makes the connection;
    #: oauth: approval lets the requester start the OAuth flow
    kind: Mapped[str] = mapped_column(String(20), default="api_key")
    status: Mapped[str] = mapped_column(String(20), default="pending", index=True)
    requested_by: Mapped[str | None] = mapped_column(String(200))
    requested_by_kind: Mapped[str | None] = mapped_column(String(20))
    #: SecretBox-encrypted JSON of the submitted credentials; cleared once decided
    credentials: Mapped[str | None] = mapped_column(Text)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    reason: Mapped[str | None] = mapped_column(Text)
    decided_by: Mapped[str | None] = mapped_column(String(200))
    decided_by_kind: Mapped[str | None] = mapped_column(String(20))
    decided_at: Mapped[datetime | None]
    decision_note: Mapped[str | None] = mapped_column(Text)
    connection_id: Mapped[str | None] = mapped_column(String(36))
