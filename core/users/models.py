"""People who log in through the identity provider and belong to workspaces."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, false
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TimestampMixin
from patchbay.core.timeutil import utcnow


class User(IdMixin, TimestampMixin, Base):
    __tablename__ = "users"

    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(200))
    name: Mapped[str | None] = mapped_column(String(200))
    given_name: Mapped[str | None] = mapped_column(String(100))
    family_name: Mapped[str | None] = mapped_column(String(100))
    picture: Mapped[str | None] = mapped_column(String(500))
    phone_number: Mapped[str | None] = mapped_column(String(40))
    email_verified: Mapped[bool] = mapped_column(default=False)
    user_type: Mapped[str | None] = mapped_column(String(40))
    #: the platform client that created the user through ``POST /api/v1/users`` (none for users who
    #: signed up, were invited or were made by the operator): a client bound to an organization may
    #: add to it, and change, only its own users
    created_by_client_id: Mapped[str | None] = mapped_column(String(64))
    #: an operator of the deployment (``patchbay users create --operator``): the console shows them
    #: every workspace, as an admin of each
    is_operator: Mapped[bool] = mapped_column(default=False, server_default=false())


class SignInSession(IdMixin, Base):
    """A browser's sign-in at the identity provider. The cookie holds a random token; only its keyed
    digest is stored, so the table alone cannot be replayed. Ended by sign-out, a password change
    or expiry; removed with its user."""

    __tablename__ = "user_sessions"

    token_digest: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[str] = mapped_column(String(36), ForeignKey("users.id", ondelete="CASCADE"), index=True)
    auth_time: Mapped[int]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    ended_at: Mapped[datetime | None]
