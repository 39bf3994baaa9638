"""The durable job queue's table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TimestampMixin
from patchbay.core.timeutil import utcnow


class Job(IdMixin, TimestampMixin, Base):
    """One unit of background work. ``queued`` -> ``running`` (leased) -> ``done`` | ``failed``;
    a running job whose lease ran out is claimed again."""

    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_claim", "status", "run_at"),)

    kind: Mapped[str] = mapped_column(String(100), index=True)
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(10), default="queued")
    run_at: Mapped[datetime] = mapped_column(default=utcnow)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, default=5)
    lease_until: Mapped[datetime | None]
    locked_by: Mapped[str | None] = mapped_column(String(100))
    last_error: Mapped[str | None] = mapped_column(Text)
    result: Mapped[dict[str, Any] | None]
    dedupe_key: Mapped[str | None] = mapped_column(String(200), unique=True)
    workspace_id: Mapped[str | None] = mapped_column(String(36), index=True)
