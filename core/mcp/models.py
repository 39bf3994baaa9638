"""Agent grants (which connections, and tools, of a workspace an agent may use, for whom) and a
workspace's agent policy."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.storage.base import Base, TenantScoped
from patchbay.core.timeutil import new_id, utcnow


class AgentGrant(TenantScoped, Base):
    __tablename__ = "agent_grants"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    #: the user who consented; None for a server-to-server agent session (the API key's workspace)
    user_id: Mapped[str | None] = mapped_column(String(36), ForeignKey("users.id", ondelete="CASCADE"), index=True)
    #: the OAuth client the grant was given to, or ``agent-session``
    client_id: Mapped[str] = mapped_column(String(2048))
    #: the customer's own end user an agent session acts for
    end_user_id: Mapped[str | None] = mapped_column(String(200))
    connection_ids: Mapped[list[Any]] = mapped_column(default=list)
    #: allowed tool names; None: every tool of the granted connections
    tools: Mapped[list[Any] | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]


class AgentPolicy(TenantScoped, Base):
    """A workspace's rules for agents: the tools whose calls wait for an approver."""

    __tablename__ = "agent_policies"
    __table_args__ = (UniqueConstraint("workspace_id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    #: tool names (``hubspot__create_contact``) or action ids (``hubspot.create_contact``)
    approval_tools: Mapped[list[Any]] = mapped_column(default=list)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
