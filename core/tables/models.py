"""Tables and their rows.

``search_text`` holds the row's values normalised for full-text search (lower case, words separated
by single spaces); the index over it is dialect-specific and lives in the ``data`` migration: an FTS5
virtual table kept current by triggers on SQLite, a GIN index over ``to_tsvector('simple', ...)`` on
PostgreSQL (see ``patchbay.core.tables.search``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TenantScoped, TimestampMixin
from patchbay.core.tables.bulk import ordered_id
from patchbay.core.tables.search import index_inserts


class DataTable(IdMixin, TimestampMixin, TenantScoped, Base):
    __tablename__ = "data_tables"
    own_workspace_index = False  # an index or unique constraint of the table leads with workspace_id
    __table_args__ = (UniqueConstraint("workspace_id", "slug"),)

    name: Mapped[str] = mapped_column(String(200))
    slug: Mapped[str] = mapped_column(String(100))
    description: Mapped[str | None] = mapped_column(Text)
    #: ``[{"name": str, "type": "text" | "number" | "boolean" | "date" | "json"}]``
    columns: Mapped[list[Any]] = mapped_column(default=list)


class TableRow(IdMixin, TimestampMixin, TenantScoped, Base):
    __tablename__ = "table_rows"
    __table_args__ = (
        # upsert matches by external key; NULL keys (plain rows) never collide. The only index led by
        # table_id, so the planner cannot pick a worse one for key lookups on a fast-growing table.
        UniqueConstraint("table_id", "external_key"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=ordered_id)  # time-ordered: see bulk.ordered_id
    table_id: Mapped[str] = mapped_column(String(36), ForeignKey("data_tables.id", ondelete="CASCADE"))
    external_key: Mapped[str | None] = mapped_column(String(255))
    data: Mapped[dict[str, Any]] = mapped_column(default=dict)
    search_text: Mapped[str] = mapped_column(Text, default="")


index_inserts(TableRow)
