"""The console's server-side sessions: the cookie holds a random token, the table its keyed digest."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin
from patchbay.core.timeutil import utcnow


class ConsoleSession(IdMixin, Base):
    """A person signed in to the console. Ended by sign-out (or the user's deletion); dead after
    ``expires_at``, and as soon as the identity provider revokes the grant it was signed in with
    (``grant_id``, the ID token's ``sid``: a sign-out at the identity provider ends it too).
    ``id_token`` is kept for the ``id_token_hint`` of RP-initiated logout."""

    __tablename__ = "console_sessions"

    token_digest: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[str] = mapped_column(String(36), ForeignKey("users.id", ondelete="CASCADE"), index=True)
    #: per-session secret the CSRF tokens of its forms are keyed with
    csrf_secret: Mapped[str] = mapped_column(String(64))
    id_token: Mapped[str | None] = mapped_column(Text)
    grant_id: Mapped[str | None] = mapped_column(String(36), ForeignKey("oidc_grants.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    ended_at: Mapped[datetime | None]
