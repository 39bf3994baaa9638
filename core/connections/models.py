"""A workspace's connections to providers (credentials encrypted), the OAuth states of logins in
progress, bring-your-own-app credentials and the audit log of proxied calls."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TenantScoped, TimestampMixin
from patchbay.core.timeutil import utcnow

#: connected: usable; expired: the access token expired and could not be refreshed yet;
#: invalid: the provider refused the credentials for good (refresh gave invalid_grant);
#: disconnected: removed by the workspace (kept for audit).
CONNECTION_STATUSES = ("connected", "expired", "invalid", "disconnected")
ACTIVE_STATUSES = ("connected", "expired")


class Connection(IdMixin, TimestampMixin, TenantScoped, Base):
    __tablename__ = "connections"
    own_workspace_index = False  # an index or unique constraint of the table leads with workspace_id
    __table_args__ = (
        Index("ix_connections_workspace_provider", "workspace_id", "provider"),
        Index("ix_connections_workspace_created", "workspace_id", "created_at"),
    )

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
    #: The refresh lease: a process refreshing this connection's token holds it until it writes the
    #: new token (compare-and-swap on these two columns; see ``refresh``).
    refresh_lease_until: Mapped[datetime | None]
    refresh_lease_owner: Mapped[str | None] = mapped_column(String(64))
    #: After a failed refresh no new attempt is made before this moment (cooldown).
    refresh_retry_at: Mapped[datetime | None]
    refresh_failures: Mapped[int] = mapped_column(Integer, default=0)
    #: Where the OAuth app credentials of this connection come from: deployment, byoa, connection.
    oauth_app: Mapped[str | None] = mapped_column(String(20))
    #: the customer's end user who made the connection on the hosted connect page
    end_user_id: Mapped[str | None] = mapped_column(String(255), index=True)


class OAuthState(IdMixin, TenantScoped, Base):
    """One OAuth login in progress. Its id travels (signed) in the ``state`` parameter; the callback
    deletes the row, so a state works once, and only before ``expires_at``."""

    __tablename__ = "oauth_states"

    provider: Mapped[str] = mapped_column(String(100))
    #: where the user's browser goes after the callback (the caller's redirect_uri)
    return_to: Mapped[str | None] = mapped_column(Text)
    #: the redirect_uri sent to the provider (our callback URL); the code exchange repeats it
    callback_uri: Mapped[str] = mapped_column(Text)
    code_verifier: Mapped[str | None] = mapped_column(Text)  # encrypted
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    connection_id: Mapped[str | None] = mapped_column(String(36))
    oauth_app: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]


class ByoaCredential(IdMixin, TimestampMixin, TenantScoped, Base):
    """A workspace's own OAuth app for a provider (spec 4.20): used instead of the deployment's."""

    __tablename__ = "byoa_credentials"
    own_workspace_index = False  # an index or unique constraint of the table leads with workspace_id
    __table_args__ = (UniqueConstraint("workspace_id", "provider"),)

    provider: Mapped[str] = mapped_column(String(100))
    client_id: Mapped[str] = mapped_column(Text)
    client_secret: Mapped[str] = mapped_column(Text)  # encrypted
    scopes: Mapped[list[Any]] = mapped_column(default=list)


class ProxyCallLog(IdMixin, TenantScoped, Base):
    """The audit row of one call made with a connection's credentials (never a secret; the path is
    stored without its query string). No foreign key: the log outlives a deleted connection."""

    __tablename__ = "proxy_call_logs"
    own_workspace_index = False  # an index or unique constraint of the table leads with workspace_id
    __table_args__ = (
        Index("ix_proxy_call_logs_connection_created", "connection_id", "created_at"),
        Index("ix_proxy_call_logs_workspace_created", "workspace_id", "created_at"),
    )

    connection_id: Mapped[str] = mapped_column(String(36))
    provider: Mapped[str] = mapped_column(String(100))
    source: Mapped[str] = mapped_column(String(20))  # proxy, client (actions, triggers, ...)
    method: Mapped[str] = mapped_column(String(10))
    path: Mapped[str] = mapped_column(Text)
    status: Mapped[int] = mapped_column(Integer)
    duration_ms: Mapped[float]
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: an MCP tool call's OAuth client and user (``end_user:<id>`` for an agent session's end user)
    client_id: Mapped[str | None] = mapped_column(String(255))
    user_id: Mapped[str | None] = mapped_column(String(255))
