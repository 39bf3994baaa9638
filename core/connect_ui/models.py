"""Connect sessions: a customer's server asks for one, its end user connects providers with it on
the hosted page."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import String, Text
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TenantScoped, TimestampMixin


class ConnectSession(IdMixin, TimestampMixin, TenantScoped, Base):
    """One end user's permission to connect providers to the workspace until ``expires_at``. Only
    the digest of its token is stored; the token works until it is used once (a connection made,
    renewed or held for approval: ``used_at``), the session is revoked or it expires."""

    __tablename__ = "connect_sessions"

    token_digest: Mapped[str] = mapped_column(String(128), unique=True)
    end_user_id: Mapped[str] = mapped_column(String(255), index=True)
    #: display data of the end user: ``{email?, displayName?}``
    end_user: Mapped[dict[str, Any]] = mapped_column(default=dict)
    #: provider names the page offers; None offers every installed provider
    allowed_providers: Mapped[list[Any] | None]
    default_metadata: Mapped[dict[str, Any]] = mapped_column(default=dict)
    return_url: Mapped[str | None] = mapped_column(Text)
    #: the connection a reconnect session renews
    reconnect_id: Mapped[str | None] = mapped_column(String(36))
    #: the connection made (or renewed) with this session
    connection_id: Mapped[str | None] = mapped_column(String(36))
    #: the approval request the workspace's policy opened for this session's connect
    approval_id: Mapped[str | None] = mapped_column(String(36))
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]
