"""A workspace's audit trail of administrative changes: who changed its members, invites and API
keys, and when.

The service that makes a change writes its event with :func:`record`, in the session (so the
transaction) of the change: a change refused or rolled back leaves no event. The actor is an
:class:`Actor`, built by the caller from who made the request. An event's label and details name
the change (an email, a role, a key's display prefix), never a secret: no token, no key.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import attrs
from sqlalchemy import Index, String, and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from patchbay.core.security.models import ApiKey
from patchbay.core.storage.base import Base, IdMixin, TenantScoped
from patchbay.core.timeline import Key
from patchbay.core.timeutil import utcnow
from patchbay.core.users.models import User

if TYPE_CHECKING:
    from patchbay.core.security.auth import Principal
    from patchbay.core.services import Services

ActorKind = Literal["user", "api_key", "operator", "system"]

#: every action an event may name
ACTIONS = ("member.role_changed", "member.removed", "invite.created", "invite.revoked", "api_key.created", "api_key.revoked")


class WorkspaceAuditEvent(IdMixin, TenantScoped, Base):
    """One administrative change of a workspace (never updated)."""

    __tablename__ = "workspace_audit_events"
    own_workspace_index = False  # an index or unique constraint of the table leads with workspace_id
    __table_args__ = (Index("ix_workspace_audit_events_workspace_id_created_at", "workspace_id", "created_at"),)

    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    actor_kind: Mapped[str] = mapped_column(String(20))
    actor_id: Mapped[str | None] = mapped_column(String(200))
    #: an email or an API key's display prefix: who, in words a person recognizes
    actor_label: Mapped[str | None] = mapped_column(String(320))
    action: Mapped[str] = mapped_column(String(40))
    target_id: Mapped[str | None] = mapped_column(String(200))
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)


@attrs.frozen
class Actor:
    """Who makes a change: a signed-in ``user`` (id: the user's), an ``api_key`` (id: the key's),
    the ``operator`` (the server's admin API key), or the ``system`` (a service client's token: id
    the client's). ``label`` None is filled in by :func:`record` (the user's email, the key's
    prefix)."""

    kind: ActorKind
    id: str | None = None
    label: str | None = None

    @classmethod
    def of(cls, principal: Principal) -> Actor:
        """The actor of a connect-API request's principal."""
        if principal.kind == "api_key":
            return cls("api_key", principal.subject)
        if principal.subject and principal.subject != principal.client_id:
            return cls("user", principal.subject)
        return cls("system", principal.client_id, principal.client_id)


async def _label(session: AsyncSession, actor: Actor) -> str | None:
    if actor.label is not None or actor.id is None:
        return actor.label
    if actor.kind == "user":
        return await session.scalar(select(User.email).where(User.id == actor.id))
    if actor.kind == "api_key":
        return await session.scalar(select(ApiKey.prefix).where(ApiKey.id == actor.id))
    return None


async def record(
    session: AsyncSession, *, workspace_id: str, actor: Actor, action: str, target_id: str | None, details: dict[str, Any] | None = None
) -> WorkspaceAuditEvent:
    """Add the event of a change to the change's own session (its transaction)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r}")
    event = WorkspaceAuditEvent(
        workspace_id=workspace_id,
        actor_kind=actor.kind,
        actor_id=actor.id,
        actor_label=await _label(session, actor),
        action=action,
        target_id=target_id,
        details=details or {},
    )
    session.add(event)
    await session.flush()
    return event


async def events_page(
    services: Services, *, workspace_id: str, action: str | None, before: Key | None, limit: int
) -> tuple[list[WorkspaceAuditEvent], Key | None]:
    """The workspace's events, newest first, those older than ``before`` (keyset), at most
    ``limit``; and the key of the next page (None on the last)."""
    async with services.db.session(tenant=workspace_id) as session:
        statement = select(WorkspaceAuditEvent)
        if action:
            statement = statement.where(WorkspaceAuditEvent.action == action)
        if before is not None:
            created, row_id = WorkspaceAuditEvent.created_at, WorkspaceAuditEvent.id
            statement = statement.where(created <= before.at, or_(created < before.at, and_(created == before.at, row_id < before.id)))
        rows = list(await session.scalars(statement.order_by(WorkspaceAuditEvent.created_at.desc(), WorkspaceAuditEvent.id.desc()).limit(limit + 1)))
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, Key(rows[-1].created_at, rows[-1].id) if more and rows else None
