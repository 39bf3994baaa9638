"""Time and id conventions of the API: UTC everywhere, ISO 8601 with milliseconds and ``Z``."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime | None) -> str | None:
    """``2026-01-02T03:04:05.678Z``; None stays None."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    """An opaque id (a UUID4 string)."""
    return str(uuid.uuid4())
