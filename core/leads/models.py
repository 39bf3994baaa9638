"""Leads, their CRM syncs, and lead imports."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TenantScoped, TimestampMixin

#: none: no CRM destination connected; pending: a push is queued; synced: every destination has
#: it; failed: a destination refused it (retried by ``retry-failed-syncs``).
CRM_SYNC_STATUSES = ("none", "pending", "synced", "failed")


class Lead(IdMixin, TimestampMixin, TenantScoped, Base):
    """One person who filled in a provider's lead form, cleaned. Deduplicated per workspace by the
    provider's lead id, then by normalised email, then by normalised phone."""

    __tablename__ = "leads"
    own_workspace_index = False  # an index or unique constraint of the table leads with workspace_id
    __table_args__ = (
        UniqueConstraint("workspace_id", "provider", "external_id"),
        Index("ix_leads_workspace_email", "workspace_id", "email"),
        Index("ix_leads_workspace_phone", "workspace_id", "phone"),
        Index("ix_leads_workspace_created", "workspace_id", "created_at"),
    )

    provider: Mapped[str] = mapped_column(String(100))
    connection_id: Mapped[str | None] = mapped_column(String(36))
    event_id: Mapped[str | None] = mapped_column(String(36))
    external_id: Mapped[str | None] = mapped_column(String(200))
    form_id: Mapped[str | None] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(10), default="webhook")
    email: Mapped[str | None] = mapped_column(String(320))
    phone: Mapped[str | None] = mapped_column(String(40))
    first_name: Mapped[str | None] = mapped_column(String(200))
    last_name: Mapped[str | None] = mapped_column(String(200))
    full_name: Mapped[str | None] = mapped_column(String(400))
    fields: Mapped[dict[str, Any]] = mapped_column(default=dict)
    raw: Mapped[dict[str, Any]] = mapped_column(default=dict)
    captured_at: Mapped[datetime | None]
    crm_sync_status: Mapped[str] = mapped_column(String(10), default="none", index=True)


class LeadSync(IdMixin, TimestampMixin, TenantScoped, Base):
    """A lead pushed (or to be pushed) to one CRM destination connection."""

    __tablename__ = "lead_syncs"
    __table_args__ = (UniqueConstraint("lead_id", "connection_id"),)

    lead_id: Mapped[str] = mapped_column(String(36), index=True)
    connection_id: Mapped[str] = mapped_column(String(36))
    provider: Mapped[str] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(String(10), default="pending", index=True)
    external_id: Mapped[str | None] = mapped_column(String(200))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    last_attempt_at: Mapped[datetime | None]


#: queued -> running (page by page, the cursor saved with each page) -> completed | failed
IMPORT_STATUSES = ("queued", "running", "completed", "failed")


class LeadImport(IdMixin, TimestampMixin, TenantScoped, Base):
    """A backfill of a connection's leads from the provider, resumable from ``cursor``."""

    __tablename__ = "lead_imports"

    provider: Mapped[str] = mapped_column(String(100))
    connection_id: Mapped[str] = mapped_column(String(36))
    status: Mapped[str] = mapped_column(String(10), default="queued", index=True)
    cursor: Mapped[dict[str, Any] | None]
    pages: Mapped[int] = mapped_column(Integer, default=0)
    imported: Mapped[int] = mapped_column(Integer, default=0)
    duplicates: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    finished_at: Mapped[datetime | None]
