"""Integration settings stored at run time: per provider, the deployment's (``scope`` empty) or one
workspace's OAuth app, scopes, API base URL and webhook secrets. They override the
``[providers.<name>]`` table of the settings file, which stays the seed.

Not :class:`~patchbay.core.storage.base.TenantScoped`: a deployment's row belongs to no workspace.
The service filters by ``scope`` itself; a workspace's rows go with the workspace (``ON DELETE
CASCADE``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, IdMixin, TimestampMixin

#: the ``scope`` of the deployment's rows
DEPLOYMENT = ""


class IntegrationSetting(IdMixin, TimestampMixin, Base):
    """One provider's stored settings at one level. A column left None falls back to the next level
    (workspace -> deployment -> settings file -> provider definition). Secrets are encrypted with
    the secret box; their fingerprints (a keyed digest's first characters) are what the API shows."""

    __tablename__ = "integration_settings"
    __table_args__ = (UniqueConstraint("scope", "provider"),)

    #: ``""`` for the deployment, else the workspace id
    scope: Mapped[str] = mapped_column(String(36))
    workspace_id: Mapped[str | None] = mapped_column(String(36), ForeignKey("workspaces.id", ondelete="CASCADE"), index=True)
    provider: Mapped[str] = mapped_column(String(100))
    client_id: Mapped[str | None] = mapped_column(Text)
    client_secret: Mapped[str | None] = mapped_column(Text)
    client_secret_fingerprint: Mapped[str | None] = mapped_column(String(64))
    scopes: Mapped[list[Any] | None]
    api_base_url: Mapped[str | None] = mapped_column(Text)
    webhook_secret: Mapped[str | None] = mapped_column(Text)
    webhook_secret_fingerprint: Mapped[str | None] = mapped_column(String(64))
    webhook_verify_token: Mapped[str | None] = mapped_column(Text)
    webhook_verify_token_fingerprint: Mapped[str | None] = mapped_column(String(64))


class IntegrationVersion(Base):
    """One row whose ``version`` every write of :class:`IntegrationSetting` increments in its own
    transaction: a process compares it with the version its cache was read at (one indexed read)."""

    __tablename__ = "integration_versions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger, default=0)
