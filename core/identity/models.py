"""Rows of the identity provider: clients, authorization codes, grants with their refresh tokens,
remembered consents and links to federated identities. Secrets (client secrets, codes, refresh
tokens) are stored only as keyed digests."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TimestampMixin
from patchbay.core.timeutil import utcnow

TRUST_LEVELS = ("third_party", "first_party", "platform")


class OidcClient(TimestampMixin, Base):
    """A registered relying party (spec 2.15). ``workspace_id`` binds a client_credentials client
    to a workspace so that its tokens open the connect API for it. ``trust`` is granted by the
    operator, never self-served: ``third_party`` (every dynamically registered client),
    ``first_party`` (the operator's own apps: user tokens open the connect API) or ``platform``
    (app backends that may use the platform REST API)."""

    __tablename__ = "oidc_clients"

    client_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    secret_digest: Mapped[str | None] = mapped_column(String(64))
    client_name: Mapped[str] = mapped_column(String(200))
    application: Mapped[str] = mapped_column(String(200), unique=True)
    redirect_uris: Mapped[list[Any]] = mapped_column(default=list)
    grant_types: Mapped[list[Any]] = mapped_column(default=list)
    token_endpoint_auth_method: Mapped[str] = mapped_column(String(40))
    scope: Mapped[str] = mapped_column(String(500))
    client_uri: Mapped[str | None] = mapped_column(String(500))
    logo_uri: Mapped[str | None] = mapped_column(String(500))
    require_pkce: Mapped[bool] = mapped_column(default=True)
    refresh_token_rotation: Mapped[bool] = mapped_column(default=False)
    access_token_ttl: Mapped[int] = mapped_column(default=3600)
    refresh_token_ttl: Mapped[int] = mapped_column(default=86400)
    workspace_id: Mapped[str | None] = mapped_column(String(36), ForeignKey("workspaces.id", ondelete="CASCADE"), index=True)
    permissions: Mapped[list[Any] | None]
    trust: Mapped[str] = mapped_column(String(20), default="third_party", server_default="third_party")
    #: registered by anyone through ``POST /api/v1/oidc/register`` (RFC 7591), not made by the
    #: operator: the consent page shows it as unverified
    self_registered: Mapped[bool] = mapped_column(default=False, server_default=false())
    #: a client known by its Client ID Metadata Document: the https URL it presents as its
    #: ``client_id`` (its row's ``client_id`` is derived from it, see ``core.identity.metadata_documents``)
    metadata_url: Mapped[str | None] = mapped_column(String(2048))


class AuthorizationCode(IdMixin, Base):
    """One-time, 60-second code (spec 3.5). ``grant_id`` is set when it is exchanged, so that a
    second use can revoke what the first one issued."""

    __tablename__ = "oidc_authorization_codes"

    code_digest: Mapped[str] = mapped_column(String(64), unique=True)
    client_id: Mapped[str] = mapped_column(String(64), ForeignKey("oidc_clients.client_id", ondelete="CASCADE"), index=True)
    user_id: Mapped[str] = mapped_column(String(36), ForeignKey("users.id", ondelete="CASCADE"), index=True)
    redirect_uri: Mapped[str] = mapped_column(Text)
    scope: Mapped[str] = mapped_column(String(500))
    nonce: Mapped[str | None] = mapped_column(String(500))
    code_challenge: Mapped[str | None] = mapped_column(String(200))
    code_challenge_method: Mapped[str | None] = mapped_column(String(10))
    auth_time: Mapped[int]
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]
    grant_id: Mapped[str | None] = mapped_column(String(36))
    session_id: Mapped[str | None] = mapped_column(String(36), index=True)  # the sign-in session it was issued in
    #: the RFC 8707 resource the code was asked for (the MCP server's URL), None for the IdP's own
    resource: Mapped[str | None] = mapped_column(String(2048))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Grant(IdMixin, Base):
    """What one authorization (a code exchange) granted; its refresh tokens hang off it and its
    access tokens carry its id, so revoking it ends the whole chain."""

    __tablename__ = "oidc_grants"

    client_id: Mapped[str] = mapped_column(String(64), ForeignKey("oidc_clients.client_id", ondelete="CASCADE"), index=True)
    user_id: Mapped[str] = mapped_column(String(36), ForeignKey("users.id", ondelete="CASCADE"), index=True)
    scope: Mapped[str] = mapped_column(String(500))
    nonce: Mapped[str | None] = mapped_column(String(500))
    auth_time: Mapped[int]
    #: the RFC 8707 resource its access tokens are for (the MCP server's URL; the grant's id is then
    #: the agent grant's, ``core.mcp.grants``), None for the IdP's own tokens
    resource: Mapped[str | None] = mapped_column(String(2048))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None]


class RefreshToken(IdMixin, Base):
    __tablename__ = "oidc_refresh_tokens"

    token_digest: Mapped[str] = mapped_column(String(64), unique=True)
    grant_id: Mapped[str] = mapped_column(String(36), ForeignKey("oidc_grants.id", ondelete="CASCADE"), index=True)
    client_id: Mapped[str] = mapped_column(String(64), index=True)
    user_id: Mapped[str] = mapped_column(String(36), index=True)
    scope: Mapped[str] = mapped_column(String(500))
    expires_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]
    rotated_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Consent(IdMixin, TimestampMixin, Base):
    """Scopes a user granted to a client; a request within them skips the consent page."""

    __tablename__ = "oidc_consents"
    __table_args__ = (UniqueConstraint("user_id", "client_id"),)

    user_id: Mapped[str] = mapped_column(String(36), ForeignKey("users.id", ondelete="CASCADE"), index=True)
    client_id: Mapped[str] = mapped_column(String(64), ForeignKey("oidc_clients.client_id", ondelete="CASCADE"))
    scopes: Mapped[list[Any]] = mapped_column(default=list)


class FederatedIdentity(IdMixin, TimestampMixin, Base):
    """A user's account at an upstream identity provider of the ``idp`` hint."""

    __tablename__ = "oidc_federated_identities"
    __table_args__ = (UniqueConstraint("provider", "subject"),)

    provider: Mapped[str] = mapped_column(String(100))
    subject: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(String(36), ForeignKey("users.id", ondelete="CASCADE"), index=True)
