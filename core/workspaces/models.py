"""Workspaces (tenants) and their members."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TimestampMixin

PLANS = ("free", "starter", "professional", "enterprise")
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
