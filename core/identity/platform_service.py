"""The queries of the platform REST (``core.identity.platform``): organizations, users and
memberships as an app client sees them (``workspace_id``: a client bound to one organization sees
only it and its members; ``None``: an unbound platform client sees all)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.users.models import User
from patchbay.core.workspaces.models import Membership, Workspace

async def _page(session: AsyncSession, query: Select[Any], order: Sequence[Any], page: int, limit: int) -> tuple[list[Any], int]:
    total = await session.scalar(select(func.count()).select_from(query.subquery()))
    rows = (await session.scalars(query.order_by(*order).offset((page - 1) * limit).limit(limit))).all()
    return list(rows), int(total or 0)

async def organization_page(session: AsyncSession, *, workspace_id: str | None, page: int, limit: int) -> tuple[list[Workspace], int]:
    query = select(Workspace)
    if workspace_id is not None:
        query = query.where(Workspace.id == workspace_id)
    return await _page(session, query, (Workspace.created_at, Workspace.id), page, limit)

async def user_page(session: AsyncSession, *, workspace_id: str | None, email: str | None, page: int, limit: int) -> tuple[list[User], int]:
    """Users (members of ``workspace_id`` when given), ``email`` matched without case."""
    query = select(User)
    if workspace_id is not None:
        query = query.join(Membership, Membership.user_id == User.id).where(Membership.workspace_id == workspace_id)
    if email:
        query = query.where(func.lower(User.email) == email.strip().lower())
    return await _page(session, query, (User.created_at, User.id), page, limit)

async def visible_user(session: AsyncSession, user_id: str, *, workspace_id: str | None) -> User | None:
    """The user, when it exists and (for a bound client) is a member of ``workspace_id``."""
    row = await session.get(User, user_id)
    if row is None or workspace_id is None:
        return row
    member = await session.scalar(select(Membership.id).where(Membership.user_id == user_id, Membership.workspace_id == workspace_id))
    return row if member else None

async def addable_user(session: AsyncSession, user_id: str, *, workspace_id: str | None, client_id: str | None) -> User | None:
    """The user a client may add to ``workspace_id`` (or whose role there it may change): any user
    for an unbound client; for a bound one, a user the client created or a member already."""
    row = await session.get(User, user_id)
    if row is None or workspace_id is None or (client_id is not None and row.created_by_client_id == client_id):
        return row
    return await visible_user(session, user_id, workspace_id=workspace_id)

async def member_elsewhere(session: AsyncSession, user_id: str, workspace_id: str) -> bool:
    """Whether the user also belongs to an organization other than ``workspace_id``."""
    found = await session.scalar(select(Membership.id).where(Membership.user_id == user_id, Membership.workspace_id != workspace_id).limit(1))
    return found is not None

async def memberships(session: AsyncSession, *, workspace_id: str | None = None, user_id: str | None = None) -> list[Membership]:
    """Memberships of an organization or of a user (or of a user in one organization), oldest first."""
    query = select(Membership)
    if workspace_id is not None:
        query = query.where(Membership.workspace_id == workspace_id)
    if user_id is not None:
        query = query.where(Membership.user_id == user_id)
    return list((await session.scalars(query.order_by(Membership.created_at))).all())
