"""Agent grants: a workspace's connections (and optionally a subset of their tools) given to an
agent, for a user who consented (OAuth) or for a customer's end user (a server-to-server agent
session). An MCP access token names its grant (``grant_id``); the grant is read on every request,
so revoking it, or letting it expire, stops the next call. :func:`grant_state` reads it with
everything a tool call needs besides (the granted connections still active, the workspace's
approval list) in one session, so that a call of a connection's tool costs one database session.

The identity provider's consent page creates grants with :func:`create_grant`, the user's list of
authorized agents reads :func:`grants_of_user`, and :func:`revoke_grant` ends one.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

import attrs
from sqlalchemy import select

from patchbay.core.connections.models import ACTIVE_STATUSES, Connection
from patchbay.core.errors import Invalid, NotFound, Unauthenticated
from patchbay.core.mcp.models import AgentGrant, AgentPolicy
from patchbay.core.timeutil import utcnow
from patchbay.core.workspaces.models import Membership

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: the ``client_id`` of grants made by ``POST /connect/v1/agent-sessions``
AGENT_SESSION_CLIENT = "agent-session"


@attrs.frozen
class Grant:
    id: str
    workspace_id: str
    user_id: str | None
    client_id: str
    end_user_id: str | None
    connection_ids: tuple[str, ...] = attrs.field(converter=tuple)
    #: allowed tool names; None: every tool of the granted connections
    tools: tuple[str, ...] | None = attrs.field(converter=attrs.converters.optional(tuple))
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    @classmethod
    def from_row(cls, row: AgentGrant) -> Grant:
        return cls(
            id=row.id,
            workspace_id=row.workspace_id,
            user_id=row.user_id,
            client_id=row.client_id,
            end_user_id=row.end_user_id,
            connection_ids=row.connection_ids or (),
            tools=row.tools,
            created_at=row.created_at,
            expires_at=row.expires_at,
            revoked_at=row.revoked_at,
        )

    def is_active(self, now: datetime | None = None) -> bool:
        now = now or utcnow()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


def new_grant_id() -> str:
    return "agr_" + secrets.token_urlsafe(18)


async def create_grant(
    services: Services,
    *,
    workspace_id: str,
    user_id: str | None,
    client_id: str,
    connection_ids: Iterable[str],
    end_user_id: str | None = None,
    tools: Iterable[str] | None = None,
    expires_at: datetime | None = None,
) -> Grant:
    """Store a grant of ``connection_ids`` (each an active connection of ``workspace_id``, else
    :class:`Invalid` naming it) to ``client_id``."""
    wanted = list(dict.fromkeys(connection_ids))
    async with services.db.transaction(tenant=workspace_id) as session:
        if wanted:
            found = set(await session.scalars(select(Connection.id).where(Connection.id.in_(wanted), Connection.status.in_(ACTIVE_STATUSES))))
            missing = [connection_id for connection_id in wanted if connection_id not in found]
            if missing:
                raise Invalid(f"connection_ids: no connection {missing[0]} in this workspace")
        row = AgentGrant(
            id=new_grant_id(),
            workspace_id=workspace_id,
            user_id=user_id,
            client_id=client_id,
            end_user_id=end_user_id,
            connection_ids=wanted,
            tools=None if tools is None else list(dict.fromkeys(tools)),
            created_at=utcnow(),
            expires_at=expires_at,
        )
        session.add(row)
        await session.flush()
        return Grant.from_row(row)


async def active_grant(services: Services, grant_id: str) -> Grant:
    """The grant ``grant_id``; :class:`Unauthenticated` if there is none, or it was revoked or expired."""
    async with services.db.session() as session:
        row = await session.get(AgentGrant, grant_id)
        grant = None if row is None else Grant.from_row(row)
    if grant is None or not grant.is_active():
        raise Unauthenticated("the grant of this token was revoked or has expired")
    return grant


@attrs.frozen
class GrantState:
    """An active grant as one request sees it: its connections that are still active (id and
    provider, in the grant's order) and the tool names its workspace sends for approval."""

    grant: Grant
    connections: tuple[tuple[str, str], ...]
    approval_names: frozenset[str]


async def grant_state(services: Services, grant_id: str) -> GrantState:
    """:class:`GrantState` of ``grant_id``, read in one session (the grant joined with its
    workspace's policy and its user's membership, then its connections); :class:`Unauthenticated`
    as :func:`active_grant`, and when the user who gave it is no longer a member of its workspace."""
    async with services.db.session() as session:
        found = (
            await session.execute(
                select(AgentGrant, AgentPolicy.approval_tools, Membership.role)
                .outerjoin(AgentPolicy, AgentPolicy.workspace_id == AgentGrant.workspace_id)
                .outerjoin(Membership, (Membership.workspace_id == AgentGrant.workspace_id) & (Membership.user_id == AgentGrant.user_id))
                .where(AgentGrant.id == grant_id)
            )
        ).first()
        grant = None if found is None else Grant.from_row(found[0])
        if grant is None or not grant.is_active():
            raise Unauthenticated("the grant of this token was revoked or has expired")
        if found[0].user_id is not None and found[2] is None:
            raise Unauthenticated("the user who authorized this agent is no longer a member of its workspace")
        rows = []
        if grant.connection_ids:
            rows = (
                await session.execute(
                    select(Connection.id, Connection.provider).where(
                        Connection.workspace_id == grant.workspace_id,
                        Connection.id.in_(grant.connection_ids),
                        Connection.status.in_(ACTIVE_STATUSES),
                    )
                )
            ).all()
    connections = tuple(sorted(((row.id, row.provider) for row in rows), key=lambda c: grant.connection_ids.index(c[0])))
    return GrantState(grant=grant, connections=connections, approval_names=frozenset(found[1] or ()))


async def grants_of_user(services: Services, user_id: str) -> list[Grant]:
    """The grants ``user_id`` gave that are still active, newest first."""
    now = utcnow()
    async with services.db.session() as session:
        rows = (await session.scalars(select(AgentGrant).where(AgentGrant.user_id == user_id).order_by(AgentGrant.created_at.desc()))).all()
        grants = [Grant.from_row(row) for row in rows]
    return [grant for grant in grants if grant.is_active(now)]


async def revoke_grant(services: Services, grant_id: str, *, workspace_id: str) -> None:
    """Revoke ``grant_id`` of ``workspace_id`` (:class:`NotFound` if it is not one of its grants).
    Revoking twice keeps the first moment."""
    async with services.db.transaction(tenant=workspace_id) as session:
        row = await session.get(AgentGrant, grant_id)
        if row is None or row.workspace_id != workspace_id:
            raise NotFound("no such grant")
        if row.revoked_at is None:
            row.revoked_at = utcnow()
