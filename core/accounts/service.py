"""The services behind the ``/accounts`` routes (an account is a workspace seen from outside)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.errors import Conflict, Invalid, NotFound
from patchbay.core.workspaces.models import Workspace
from patchbay.core.workspaces.service import WorkspaceError, create_workspace, member_count

if TYPE_CHECKING:
    from patchbay.core.services import Services


async def create_account(services: Services, *, name: str, plan: str | None, external_id: str | None) -> tuple[Workspace, bool]:
    """A new account (``plan`` defaults to ``[workspaces] default_plan``), or the account of
    ``external_id`` when there is one; and whether it was created."""
    async with services.db.transaction() as session:
        try:
            return await create_workspace(session, name=name, plan=plan or services.settings.workspaces.default_plan, external_id=external_id)
        except WorkspaceError as error:
            raise Invalid(f"Validation failed: {error}") from None


async def account_page(services: Services, *, external_id: str | None, plan: str | None, page: int, limit: int) -> tuple[list[Workspace], int]:
    """A page of every account, oldest first, and how many match."""
    query = select(Workspace)
    if external_id:
        query = query.where(Workspace.external_id == external_id)
    if plan:
        query = query.where(Workspace.plan == plan)
    async with services.db.session() as session:
        total = await session.scalar(select(func.count()).select_from(query.subquery()))
        rows = await session.scalars(query.order_by(Workspace.created_at, Workspace.id).offset((page - 1) * limit).limit(limit))
        return list(rows), int(total or 0)


async def get_account(services: Services, account_id: str) -> tuple[Workspace, int]:
    """The account and how many members it has; NotFound."""
    async with services.db.session() as session:
        workspace = await session.get(Workspace, account_id)
        if workspace is None:
            raise NotFound("Account not found")
        return workspace, await member_count(session, account_id)


async def ensure_external_id_free(session: AsyncSession, external_id: str | None, *, account_id: str) -> None:
    """Conflict when another account already has ``external_id``."""
    if external_id and await session.scalar(select(Workspace.id).where(Workspace.external_id == external_id, Workspace.id != account_id)):
        raise Conflict("Another account has this externalId")


async def update_account(services: Services, account_id: str, changes: dict[str, Any]) -> Workspace:
    """Set ``changes`` (attributes of the workspace); NotFound, or Conflict when another account
    has the new ``external_id``."""
    async with services.db.transaction() as session:
        workspace = await session.get(Workspace, account_id)
        if workspace is None:
            raise NotFound("Account not found")
        await ensure_external_id_free(session, changes.get("external_id"), account_id=account_id)
        for attribute, value in changes.items():
            setattr(workspace, attribute, value)
        await session.flush()
        return workspace


async def delete_account(services: Services, account_id: str) -> None:
    """Delete the account and everything it owns; NotFound, or Conflict when rows that may not
    be deleted with it still refer to it."""
    try:
        async with services.db.transaction() as session:
            deleted = await session.execute(delete(Workspace).where(Workspace.id == account_id))
            if deleted.rowcount != 1:
                raise NotFound("Account not found")
    except IntegrityError:
        raise Conflict("The account still owns data that cannot be deleted") from None
