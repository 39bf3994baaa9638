"""Provider records and the data-sync cursor of each (connection, resource type).

``search_text`` is indexed for full-text search like table rows (``patchbay.core.tables.search``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TenantScoped, TimestampMixin
from patchbay.core.tables.bulk import ordered_id
from patchbay.core.tables.search import index_inserts


class Record(IdMixin, TimestampMixin, TenantScoped, Base):
    __tablename__ = "records"
    own_workspace_index = False  # an index or unique constraint of the table leads with workspace_id
    __table_args__ = (
        # re-imports and re-syncs of one external record update it instead of adding a copy
        UniqueConstraint("workspace_id", "provider_type", "resource_type", "external_id"),
        Index("ix_records_workspace_kind", "workspace_id", "resource_type", "provider_type"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=ordered_id)  # time-ordered: see bulk.ordered_id
    provider_type: Mapped[str] = mapped_column(String(100))
    resource_type: Mapped[str] = mapped_column(String(100))
    external_id: Mapped[str | None] = mapped_column(String(255))
    connection_id: Mapped[str | None] = mapped_column(String(36), ForeignKey("connections.id", ondelete="SET NULL"), index=True)
    #: import (CSV) or sync (data-sync job)
    source: Mapped[str] = mapped_column(String(20), default="import")
    data: Mapped[dict[str, Any]] = mapped_column(default=dict)
    search_text: Mapped[str] = mapped_column(Text, default="")


index_inserts(Record)


class RecordSyncCursor(IdMixin, TimestampMixin, TenantScoped, Base):
    """Where the data-sync job resumes for one connection and resource type."""

    __tablename__ = "record_sync_cursors"
    __table_args__ = (UniqueConstraint("connection_id", "resource_type"),)

    connection_id: Mapped[str] = mapped_column(String(36), ForeignKey("connections.id", ondelete="CASCADE"))
    resource_type: Mapped[str] = mapped_column(String(100))
    cursor: Mapped[str | None] = mapped_column(Text)  # JSON text of the source's cursor
    last_synced_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    records_synced: Mapped[int] = mapped_column(default=0)
