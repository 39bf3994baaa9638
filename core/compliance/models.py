"""Data deletion requests (Meta's data deletion callback and users' own requests)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import String, Text
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TimestampMixin


class DeletionRequest(IdMixin, TimestampMixin, Base):
    """One request to delete a person's data, carried out by the ``compliance.delete_user_data`` job.

    ``confirmation_code`` is what the requester (and Meta) get back to check the status.
    """

    __tablename__ = "data_deletion_requests"

    confirmation_code: Mapped[str] = mapped_column(String(64), unique=True)
    #: meta: Meta's signed_request (subject = app-scoped user id); user: a signed-in user's own request
    source: Mapped[str] = mapped_column(String(20))
    subject: Mapped[str] = mapped_column(String(255))
    #: pending, completed, failed
    status: Mapped[str] = mapped_column(String(20), default="pending")
    completed_at: Mapped[datetime | None]
    #: rows removed per eraser
    result: Mapped[dict[str, Any]] = mapped_column(default=dict)
    error: Mapped[str | None] = mapped_column(Text)
