"""Creating and finding workspaces and their members (used by the CLI and the HTTP layer)."""

from __future__ import annotations

import re

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.security.secrets import random_token
from patchbay.core.workspaces.models import PLANS, ROLES, Membership, Workspace


class WorkspaceError(ValueError):
    pass


def slugify(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return slug[:60] or "workspace"


async def unique_slug(session: AsyncSession, name: str) -> str:
    base = slugify(name)
    slug = base
    while await session.scalar(select(Workspace.id).where(Workspace.slug == slug)):
        slug = f"{base}-{random_token(4).lower().replace('_', '').replace('-', '')[:6]}"
    return slug


async def create_workspace(session: AsyncSession, *, name: str, plan: str = "free", external_id: str | None = None) -> tuple[Workspace, bool]:
    """Create a workspace; with ``external_id``, answer the existing one instead (idempotent).
    Returns ``(workspace, created)``."""
    if plan not in PLANS:
        raise WorkspaceError(f"plan must be one of {', '.join(PLANS)}")
    if not name.strip():
        raise WorkspaceError("name must not be empty")
    if external_id:
        existing = await session.scalar(select(Workspace).where(Workspace.external_id == external_id))
        if existing is not None:
            return existing, False
    workspace = Workspace(name=name.strip(), slug=await unique_slug(session, name), plan=plan, external_id=external_id)
    session.add(workspace)
    await session.flush()
    return workspace, True


async def add_member(session: AsyncSession, *, workspace_id: str, user_id: str, role: str) -> Membership:
    if role not in ROLES:
        raise WorkspaceError(f"role must be one of {', '.join(ROLES)}")
    membership = await session.scalar(select(Membership).where(Membership.workspace_id == workspace_id, Membership.user_id == user_id))
    if membership is None:
        membership = Membership(workspace_id=workspace_id, user_id=user_id, role=role)
        session.add(membership)
    else:
        membership.role = role
    await session.flush()
    return membership
