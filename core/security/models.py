"""Stored credentials of the platform itself: API keys and signing keys."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TenantScoped, TimestampMixin


class ApiKey(IdMixin, TimestampMixin, TenantScoped, Base):
    """An ``x-api-key`` credential of one workspace; only its digest and display prefix are kept."""

    __tablename__ = "api_keys"

    name: Mapped[str] = mapped_column(String(200))
    prefix: Mapped[str] = mapped_column(String(20))
    key_digest: Mapped[str] = mapped_column(String(64), unique=True)
    permissions: Mapped[list[Any]] = mapped_column(default=list)
    last_used_at: Mapped[datetime | None]  # written at most once a minute per key (security.auth)
    revoked_at: Mapped[datetime | None]
    expires_at: Mapped[datetime | None]  # None: never expires


class SigningKey(TimestampMixin, Base):
    """An RSA key of the identity provider. ``status`` is current (signs), previous (still in the
    JWKS so its tokens verify) or retired."""

    __tablename__ = "signing_keys"
    __table_args__ = (
        # at most one current key, even when several processes start on an empty database at once
        Index("uq_signing_keys_one_current", "status", unique=True, sqlite_where=text("status = 'current'"), postgresql_where=text("status = 'current'")),
    )

    kid: Mapped[str] = mapped_column(String(64), primary_key=True)
    private_key: Mapped[str] = mapped_column(Text)
    public_jwk: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(10), index=True)
