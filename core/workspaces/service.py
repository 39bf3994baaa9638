"""Creating and finding workspaces and their members (used by the CLI and the HTTP layer), and the
ways in: single-use expiring invites, join requests, shareable links. Tokens are random, shown once
and stored as keyed digests (``SecretBox.digest``)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.security.secrets import SecretBox, random_token
from patchbay.core.timeutil import utcnow
from patchbay.core.users.models import User
from patchbay.core.workspaces.models import PLANS, ROLES, Invite, JoinRequest, Membership, ShareableLink, Workspace


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


async def list_workspaces(session: AsyncSession) -> list[Workspace]:
    """Every workspace, oldest first (the operator's view)."""
    return list((await session.scalars(select(Workspace).order_by(Workspace.created_at, Workspace.id))).all())


async def member_counts(session: AsyncSession) -> dict[str, int]:
    rows = await session.execute(select(Membership.workspace_id, func.count()).group_by(Membership.workspace_id))
    return dict(rows.all())


async def delete_workspace(session: AsyncSession, workspace_id: str) -> bool:
    """Delete a workspace and, through the foreign keys, everything it owns; False if unknown."""
    workspace = await session.get(Workspace, workspace_id)
    if workspace is None:
        return False
    await session.delete(workspace)
    await session.flush()
    return True


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


async def memberships_of(session: AsyncSession, user_id: str) -> list[tuple[Workspace, str]]:
    """The workspaces ``user_id`` belongs to, with the role, oldest membership first."""
    rows = await session.execute(
        select(Workspace, Membership.role).join(Membership, Membership.workspace_id == Workspace.id).where(Membership.user_id == user_id).order_by(Membership.created_at, Workspace.id)
    )
    return [(workspace, role) for workspace, role in rows.all()]


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise WorkspaceError(f"role must be one of {', '.join(ROLES)}")


class AlreadyMember(WorkspaceError):
    pass


class TokenRefused(WorkspaceError):
    """An invite or link token that is unknown (``reason`` not_found), expired, used or revoked."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Invites
# ---------------------------------------------------------------------------------------------


async def create_invite(session: AsyncSession, box: SecretBox, *, workspace_id: str, email: str, role: str, ttl: timedelta, invited_by: str | None) -> tuple[Invite, str]:
    """A new invite and its token (the only time the token exists in plain text)."""
    _check_role(role)
    email = email.strip().lower()
    if "@" not in email or len(email) > 320:
        raise WorkspaceError("email must be an email address")
    member = await session.scalar(
        select(Membership.id).join(User, User.id == Membership.user_id).where(Membership.workspace_id == workspace_id, User.email == email)
    )
    if member is not None:
        raise AlreadyMember(f"{email} is already a member of this workspace")
    token = random_token(32)
    invite = Invite(workspace_id=workspace_id, email=email, role=role, token_digest=box.digest(token), expires_at=utcnow() + ttl, invited_by=invited_by)
    session.add(invite)
    await session.flush()
    return invite, token


def invite_state(invite: Invite, now: datetime | None = None) -> str:
    if invite.accepted_at is not None:
        return "used"
    if invite.expires_at <= (now or utcnow()):
        return "expired"
    return "valid"


async def find_invite(session: AsyncSession, box: SecretBox, token: str) -> Invite:
    """The usable invite of ``token``; :class:`TokenRefused` when unknown, used or expired."""
    invite = await session.scalar(select(Invite).where(Invite.token_digest.in_(box.digests(token))))
    if invite is None:
        raise TokenRefused("not_found", "Invite not found")
    state = invite_state(invite)
    if state == "used":
        raise TokenRefused("used", "Invite has already been used")
    if state == "expired":
        raise TokenRefused("expired", "Invite has expired")
    return invite


async def accept_invite(session: AsyncSession, box: SecretBox, *, token: str, user: User) -> tuple[Invite, Membership]:
    """Use the invite once: the user (whose email it was sent to) becomes a member with its role."""
    invite = await find_invite(session, box, token)
    if invite.email != user.email.strip().lower():
        raise TokenRefused("wrong_user", "This invite was sent to another email address")
    now = utcnow()
    used = await session.execute(
        update(Invite).where(Invite.id == invite.id, Invite.accepted_at.is_(None), Invite.expires_at > now).values(accepted_at=now, accepted_by=user.id, updated_at=now)
    )
    if used.rowcount != 1:  # accepted concurrently
        raise TokenRefused("used", "Invite has already been used")
    existing = await session.scalar(select(Membership).where(Membership.workspace_id == invite.workspace_id, Membership.user_id == user.id))
    if existing is not None:  # already a member: the invite never changes a role
        return invite, existing
    membership = await add_member(session, workspace_id=invite.workspace_id, user_id=user.id, role=invite.role)
    return invite, membership


# ---------------------------------------------------------------------------------------------
# Join requests
# ---------------------------------------------------------------------------------------------


async def member_count(session: AsyncSession, workspace_id: str) -> int:
    return int(await session.scalar(select(func.count()).select_from(Membership).where(Membership.workspace_id == workspace_id)) or 0)


async def find_workspace(session: AsyncSession, *, workspace_id: str | None = None, slug: str | None = None) -> Workspace | None:
    """The workspace of ``workspace_id``, else of ``slug``; None when there is none."""
    if workspace_id:
        return await session.get(Workspace, workspace_id)
    return await session.scalar(select(Workspace).where(Workspace.slug == slug)) if slug else None


async def is_member(session: AsyncSession, workspace_id: str, user_id: str) -> bool:
    return bool(await session.scalar(select(Membership.id).where(Membership.workspace_id == workspace_id, Membership.user_id == user_id)))


async def request_join(session: AsyncSession, *, workspace_id: str, user_id: str, message: str | None) -> JoinRequest:
    if await is_member(session, workspace_id, user_id):
        raise WorkspaceError("You are already a member of this workspace")
    pending = await session.scalar(select(JoinRequest).where(JoinRequest.workspace_id == workspace_id, JoinRequest.user_id == user_id, JoinRequest.status == "pending"))
    if pending is not None:
        raise WorkspaceError("A join request is already pending")
    request = JoinRequest(workspace_id=workspace_id, user_id=user_id, message=message, status="pending")
    session.add(request)
    await session.flush()
    return request


async def decide_join_request(session: AsyncSession, *, workspace_id: str, request_id: str, approve: bool, role: str = "viewer", decided_by: str | None) -> JoinRequest | None:
    """Approve (membership with ``role``) or deny a pending request; None when there is no such
    request; WorkspaceError when it was already decided."""
    _check_role(role)
    request = await session.scalar(select(JoinRequest).where(JoinRequest.id == request_id, JoinRequest.workspace_id == workspace_id))
    if request is None:
        return None
    now = utcnow()
    status = "approved" if approve else "denied"
    decided = await session.execute(
        update(JoinRequest).where(JoinRequest.id == request_id, JoinRequest.status == "pending").values(status=status, role=role if approve else None, decided_by=decided_by, decided_at=now, updated_at=now)
    )
    if decided.rowcount != 1:
        raise WorkspaceError(f"Join request is already {request.status}")
    if approve:
        await add_member(session, workspace_id=workspace_id, user_id=request.user_id, role=role)
    await session.refresh(request)
    return request


async def pending_join_requests(session: AsyncSession, *, page: int, limit: int) -> tuple[list[tuple[JoinRequest, User]], int]:
    """A page of the session workspace's pending join requests with their users, oldest first,
    and how many are pending."""
    pending = select(JoinRequest).where(JoinRequest.status == "pending")
    total = await session.scalar(select(func.count()).select_from(pending.subquery()))
    rows = await session.execute(
        select(JoinRequest, User).join(User, User.id == JoinRequest.user_id).where(JoinRequest.status == "pending")
        .order_by(JoinRequest.created_at, JoinRequest.id).offset((page - 1) * limit).limit(limit)
    )  # fmt: skip
    return [(request, user) for request, user in rows.all()], int(total or 0)


# ---------------------------------------------------------------------------------------------
# Shareable links
# ---------------------------------------------------------------------------------------------


async def active_link(session: AsyncSession, workspace_id: str) -> ShareableLink | None:
    return await session.scalar(select(ShareableLink).where(ShareableLink.workspace_id == workspace_id, ShareableLink.revoked_at.is_(None)))


async def revoke_link(session: AsyncSession, workspace_id: str) -> bool:
    now = utcnow()
    revoked = await session.execute(
        update(ShareableLink).where(ShareableLink.workspace_id == workspace_id, ShareableLink.revoked_at.is_(None)).values(revoked_at=now, updated_at=now)
    )
    return revoked.rowcount > 0


async def create_link(session: AsyncSession, box: SecretBox, *, workspace_id: str, role: str, ttl: timedelta | None, created_by: str | None) -> tuple[ShareableLink, str]:
    """A new shareable link (revoking the previous one) and its token."""
    _check_role(role)
    await revoke_link(session, workspace_id)
    token = random_token(24)
    link = ShareableLink(workspace_id=workspace_id, token_digest=box.digest(token), role=role, expires_at=utcnow() + ttl if ttl else None, created_by=created_by)
    session.add(link)
    await session.flush()
    return link, token


async def join_by_link(session: AsyncSession, box: SecretBox, *, workspace_id: str, token: str, user_id: str) -> tuple[Membership, bool]:
    """Join through the workspace's link; ``(membership, joined)``, joined False for a member."""
    link = await session.scalar(select(ShareableLink).where(ShareableLink.token_digest.in_(box.digests(token)), ShareableLink.workspace_id == workspace_id))
    if link is None:
        raise TokenRefused("not_found", "Shareable link not found")
    if link.revoked_at is not None:
        raise TokenRefused("revoked", "Shareable link has been revoked")
    if link.expires_at is not None and link.expires_at <= utcnow():
        raise TokenRefused("expired", "Shareable link has expired")
    existing = await session.scalar(select(Membership).where(Membership.workspace_id == workspace_id, Membership.user_id == user_id))
    if existing is not None:
        return existing, False
    await session.execute(update(ShareableLink).where(ShareableLink.id == link.id).values(uses=ShareableLink.uses + 1, updated_at=utcnow()))
    return await add_member(session, workspace_id=workspace_id, user_id=user_id, role=link.role), True
