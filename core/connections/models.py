"""A workspace's connection to a provider, with its credentials encrypted."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TenantScoped, TimestampMixin

#: connected: usable; expired: the access token expired and could not be refreshed yet;
#: invalid: the provider refused the credentials for good (refresh gave invalid_grant);
#: disconnected: removed by the workspace (kept for audit).
CONNECTION_STATUSES = ("connected", "expired", "invalid", "disconnected")


class Connection(IdMixin, TimestampMixin, TenantScoped, Base):
    __tablename__ = "connections"
    __table_args__ = (Index("ix_connections_workspace_provider", "workspace_id", "provider"),)

    provider: Mapped[str] = mapped_column(String(100), index=True)
    status: Mapped[str] = mapped_column(String(20), default="connected")
    #: SecretBox-encrypted JSON: access_token, refresh_token, api_key, api_secret, username, password...
    credentials: Mapped[str] = mapped_column(Text)
    #: values of the provider's ``connection_params`` (subdomain, instance_url, ...)
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    #: provider-specific descriptive data shown to the customer (page_id, account name, ...)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    scopes: Mapped[list[Any]] = mapped_column(default=list)
    expires_at: Mapped[datetime | None]
    connected_at: Mapped[datetime | None]
    last_refreshed_at: Mapped[datetime | None]
    refresh_error: Mapped[str | None] = mapped_column(Text)
    health: Mapped[str | None] = mapped_column(String(20))
    last_health_check_at: Mapped[datetime | None]
