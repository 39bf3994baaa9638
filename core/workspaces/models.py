"""Workspaces (tenants), their members, and the ways in: invites, join requests, shareable links."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.settings import WORKSPACE_PLANS
from patchbay.core.storage.base import Base, IdMixin, TenantScoped, TimestampMixin

PLANS = WORKSPACE_PLANS
ROLES = ("admin", "manager", "viewer")


class Workspace(IdMixin, TimestampMixin, Base):
    """A tenant. Seen through the unprefixed routes it is an *account* (contract section 4)."""

    __tablename__ = "workspaces"

    name: Mapped[str] = mapped_column(String(200))
    slug: Mapped[str] = mapped_column(String(100), unique=True)
    plan: Mapped[str] = mapped_column(String(20), default="free")
    external_id: Mapped[str | None] = mapped_column(String(200), unique=True)
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Membership(IdMixin, TimestampMixin, Base):
    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("workspace_id", "user_id"),)

    workspace_id: Mapped[str] = mapped_column(String(36), ForeignKey("workspaces.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[str] = mapped_column(String(36), ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(20), default="viewer")


class Invite(IdMixin, TimestampMixin, TenantScoped, Base):
    """An invitation of an email address; its token (stored as a keyed digest) is single-use and
    expires."""

    __tablename__ = "workspace_invites"

    email: Mapped[str] = mapped_column(String(320))
    role: Mapped[str] = mapped_column(String(20), default="viewer")
    token_digest: Mapped[str] = mapped_column(String(64), unique=True)
    expires_at: Mapped[datetime]
    invited_by: Mapped[str | None] = mapped_column(String(200))
    accepted_at: Mapped[datetime | None]
    accepted_by: Mapped[str | None] = mapped_column(String(36))
    email_sent_at: Mapped[datetime | None]


class JoinRequest(IdMixin, TimestampMixin, TenantScoped, Base):
    """A user asking to join; an administrator approves (membership with a role) or denies it."""

    __tablename__ = "workspace_join_requests"

    user_id: Mapped[str] = mapped_column(String(36), ForeignKey("users.id", ondelete="CASCADE"), index=True)
    message: Mapped[str | None] = mapped_column(Text)
    #: pending, approved, denied
    status: Mapped[str] = mapped_column(String(20), default="pending", index=True)
    role: Mapped[str | None] = mapped_column(String(20))
    decided_by: Mapped[str | None] = mapped_column(String(200))
    decided_at: Mapped[datetime | None]


class ShareableLink(IdMixin, TimestampMixin, TenantScoped, Base):
    """A link anyone signed in may use to join with ``role`` until it expires or is revoked; a new
    link revokes the previous one."""

    __tablename__ = "workspace_links"

    token_digest: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(20), default="viewer")
    expires_at: Mapped[datetime | None]
    created_by: Mapped[str | None] = mapped_column(String(200))
    revoked_at: Mapped[datetime | None]
    uses: Mapped[int] = mapped_column(default=0)
