"""Creating and finding workspaces and their members (used by the CLI and the HTTP layer), and the
ways in: single-use expiring invites, join requests, shareable links. Tokens are random, shown once
and stored as keyed digests (``SecretBox.digest``). A member's role changes, and a member leaves,
only while the workspace keeps an admin.

The functions of a session serve the CLI and other features; the operations of the workspaces API,
at the end, take the services and open their own transaction. Refusals are domain errors, except
:class:`TokenRefused` (an invite or link token that is unknown, used, expired or revoked: its
``reason`` picks 404, 403 or 410) and :class:`WorkspaceError` (a value the callers refuse with 400)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, delete, exists, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from patchbay.core.errors import Conflict, DomainError, Invalid, NotFound, Unauthenticated
from patchbay.core.security.secrets import SecretBox, random_token
from patchbay.core.timeutil import utcnow
from patchbay.core.users.models import User
from patchbay.core.users.service import find_user_by_email
from patchbay.core.workspaces.audit import Actor, record
from patchbay.core.workspaces.mail import INVITE_EMAIL_JOB
from patchbay.core.workspaces.models import PLANS, ROLES, Invite, JoinRequest, Membership, ShareableLink, Workspace

if TYPE_CHECKING:
    from patchbay.core.security.auth import Principal
    from patchbay.core.services import Services

#: the longest an invite may stay valid
MAX_INVITE_HOURS = 24 * 90


class WorkspaceError(ValueError):
    pass


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise WorkspaceError(f"role must be one of {', '.join(ROLES)}")


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
    """Make ``user_id`` a member with ``role``; a member already gets ``role`` through
    :func:`set_member_role` (so the workspace's last admin keeps the role)."""
    _check_role(role)
    membership = await session.scalar(select(Membership).where(Membership.workspace_id == workspace_id, Membership.user_id == user_id))
    if membership is None:
        membership = Membership(workspace_id=workspace_id, user_id=user_id, role=role)
        session.add(membership)
        await session.flush()
        return membership
    if membership.role == role:
        return membership
    return await set_member_role(session, workspace_id=workspace_id, user_id=user_id, role=role)


# -- changing and removing members: the workspace keeps at least one admin --------------------


async def _lock_members(session: AsyncSession, workspace_id: str) -> None:
    """Serialize the changes of the workspace's members until the transaction ends: PostgreSQL
    locks the workspace's row (two admins demoting each other wait for one another, and the second
    sees the first's change); SQLite has one writer at a time (FOR UPDATE is not written there),
    and each change below is a single conditional statement."""
    await session.execute(select(Workspace.id).where(Workspace.id == workspace_id).with_for_update())


def _another_admin_remains(workspace_id: str, user_id: str) -> ColumnElement[bool]:
    """The condition under which the member ``user_id`` may stop being an admin: they are not one,
    or another member of the workspace is."""
    other = aliased(Membership)
    another_admin = exists().where(other.workspace_id == workspace_id, other.role == "admin", other.user_id != user_id)
    return or_(Membership.role != "admin", another_admin)


async def _refusal(session: AsyncSession, workspace_id: str, user_id: str, last_admin: str) -> DomainError:
    """Why a guarded change touched no row: no such member (NotFound), else the last admin (Conflict)."""
    if not await is_member(session, workspace_id, user_id):
        return NotFound("Member not found")
    return Conflict(last_admin)


async def set_member_role(session: AsyncSession, *, workspace_id: str, user_id: str, role: str) -> Membership:
    """Give the member ``user_id`` the role ``role``. :class:`WorkspaceError` for an unknown role,
    NotFound for a user who is not a member, Conflict for demoting the last admin."""
    _check_role(role)
    await _lock_members(session, workspace_id)
    member = (Membership.workspace_id == workspace_id, Membership.user_id == user_id)
    guard = () if role == "admin" else (_another_admin_remains(workspace_id, user_id),)
    changed = await session.execute(
        update(Membership).where(*member, *guard).values(role=role, updated_at=utcnow()).execution_options(synchronize_session=False)
    )
    if changed.rowcount != 1:
        raise await _refusal(session, workspace_id, user_id, "The workspace's last admin cannot be given another role: make another member admin first")
    return (await session.scalars(select(Membership).where(*member).execution_options(populate_existing=True))).one()


async def delete_member(session: AsyncSession, *, workspace_id: str, user_id: str) -> None:
    """Remove the member ``user_id`` (an admin themself included, while another admin remains).
    NotFound for a user who is not a member, Conflict for the last admin."""
    await _lock_members(session, workspace_id)
    removed = await session.execute(
        delete(Membership)
        .where(Membership.workspace_id == workspace_id, Membership.user_id == user_id, _another_admin_remains(workspace_id, user_id))
        .execution_options(synchronize_session=False)
    )
    if removed.rowcount != 1:
        raise await _refusal(session, workspace_id, user_id, "The workspace's last admin cannot be removed: make another member admin first")


async def memberships_of(session: AsyncSession, user_id: str) -> list[tuple[Workspace, str]]:
    """The workspaces ``user_id`` belongs to, with the role, oldest membership first."""
    rows = await session.execute(
        select(Workspace, Membership.role)
        .join(Membership, Membership.workspace_id == Workspace.id)
        .where(Membership.user_id == user_id)
        .order_by(Membership.created_at, Workspace.id)
    )
    return [(workspace, role) for workspace, role in rows.all()]


class TokenRefused(WorkspaceError):
    """An invite or link token that is unknown (``reason`` not_found), expired, used or revoked."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Invites
# ---------------------------------------------------------------------------------------------


async def create_invite(
    session: AsyncSession, box: SecretBox, *, workspace_id: str, email: str, role: str, ttl: timedelta, invited_by: str | None
) -> tuple[Invite, str]:
    """A new invite and its token (the only time the token exists in plain text)."""
    _check_role(role)
    email = email.strip().lower()
    if "@" not in email or len(email) > 320:
        raise WorkspaceError("email must be an email address")
    member = await session.scalar(
        select(Membership.id).join(User, User.id == Membership.user_id).where(Membership.workspace_id == workspace_id, User.email == email)
    )
    if member is not None:
        raise Conflict(f"{email} is already a member of this workspace")
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
        update(Invite)
        .where(Invite.id == invite.id, Invite.accepted_at.is_(None), Invite.expires_at > now)
        .values(accepted_at=now, accepted_by=user.id, updated_at=now)
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
        raise Conflict("You are already a member of this workspace")
    pending = await session.scalar(
        select(JoinRequest).where(JoinRequest.workspace_id == workspace_id, JoinRequest.user_id == user_id, JoinRequest.status == "pending")
    )
    if pending is not None:
        raise Conflict("A join request is already pending")
    request = JoinRequest(workspace_id=workspace_id, user_id=user_id, message=message, status="pending")
    session.add(request)
    await session.flush()
    return request


async def decide_join_request(
    session: AsyncSession, *, workspace_id: str, request_id: str, approve: bool, role: str = "viewer", decided_by: str | None
) -> JoinRequest | None:
    """Approve (membership with ``role``) or deny a pending request; None when there is no such
    request; Conflict when it was already decided."""
    _check_role(role)
    request = await session.scalar(select(JoinRequest).where(JoinRequest.id == request_id, JoinRequest.workspace_id == workspace_id))
    if request is None:
        return None
    now = utcnow()
    status = "approved" if approve else "denied"
    decided = await session.execute(
        update(JoinRequest)
        .where(JoinRequest.id == request_id, JoinRequest.status == "pending")
        .values(status=status, role=role if approve else None, decided_by=decided_by, decided_at=now, updated_at=now)
    )
    if decided.rowcount != 1:
        raise Conflict(f"Join request is already {request.status}")
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
        select(JoinRequest, User)
        .join(User, User.id == JoinRequest.user_id)
        .where(JoinRequest.status == "pending")
        .order_by(JoinRequest.created_at, JoinRequest.id)
        .offset((page - 1) * limit)
        .limit(limit)
    )
    return [(request, user) for request, user in rows.all()], int(total or 0)


# ---------------------------------------------------------------------------------------------
# Shareable links
# ---------------------------------------------------------------------------------------------


async def revoke_link(session: AsyncSession, workspace_id: str) -> bool:
    now = utcnow()
    revoked = await session.execute(
        update(ShareableLink).where(ShareableLink.workspace_id == workspace_id, ShareableLink.revoked_at.is_(None)).values(revoked_at=now, updated_at=now)
    )
    return revoked.rowcount > 0


async def create_link(
    session: AsyncSession, box: SecretBox, *, workspace_id: str, role: str, ttl: timedelta | None, created_by: str | None
) -> tuple[ShareableLink, str]:
    """A new shareable link (revoking the previous one) and its token."""
    _check_role(role)
    await revoke_link(session, workspace_id)
    token = random_token(24)
    link = ShareableLink(
        workspace_id=workspace_id, token_digest=box.digest(token), role=role, expires_at=utcnow() + ttl if ttl else None, created_by=created_by
    )
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


# ---------------------------------------------------------------------------------------------
# Operations of the workspaces API: each in a transaction of its own
# ---------------------------------------------------------------------------------------------


def _invalid(error: WorkspaceError) -> Invalid:
    return Invalid(f"Validation failed: {error}")


async def _user(session: AsyncSession, user_id: str) -> User:
    """The signed-in user ``user_id``; Unauthenticated when the account is gone."""
    user = await session.get(User, user_id)
    if user is None:
        raise Unauthenticated("Unauthorized: the signed-in account no longer exists; sign in again with another account")
    return user


async def workspaces_of(services: Services, principal: Principal) -> list[tuple[Workspace, str | None]]:
    """The caller's workspaces: a user's memberships with the role, or a credential's own workspace."""
    async with services.db.session() as session:
        if principal.kind == "access_token" and principal.subject and principal.subject != principal.client_id and await session.get(User, principal.subject):
            return list(await memberships_of(session, principal.subject))
        workspace = await session.get(Workspace, principal.workspace_id) if principal.workspace_id else None
        return [(workspace, None)] if workspace else []


async def open_workspace(
    services: Services,
    *,
    name: str,
    plan: str,
    external_id: str | None,
    user_id: str | None = None,
    owner_user_id: str | None = None,
    owner_email: str | None = None,
    owners_workspace: str | None = None,
) -> tuple[Workspace, bool]:
    """Create a workspace (or answer the one of ``external_id``); a new one gets an admin: the
    signed-in ``user_id``, or the owner named by id or email (who must be a member of
    ``owners_workspace`` when the caller is that workspace's credential)."""
    async with services.db.transaction() as session:
        owner_id = user_id
        if user_id is not None:
            await _user(session, user_id)
        elif owner_user_id or owner_email:
            owner = await session.get(User, owner_user_id) if owner_user_id else await find_user_by_email(session, owner_email or "")
            if owners_workspace is not None and (owner is None or not await is_member(session, owners_workspace, owner.id)):
                raise Invalid("Validation failed: the owner must be a member of the calling workspace")
            if owner is None:
                raise Invalid(f"Validation failed: {'ownerUserId' if owner_user_id else 'ownerEmail'} is not a user")
            owner_id = owner.id
        try:
            workspace, created = await create_workspace(session, name=name, plan=plan, external_id=external_id)
        except WorkspaceError as error:
            raise _invalid(error) from None
        if created and owner_id:
            await add_member(session, workspace_id=workspace.id, user_id=owner_id, role="admin")
    return workspace, created


async def invite_of(services: Services, token: str) -> tuple[Invite, Workspace]:
    """The usable invite of ``token`` and its workspace; :class:`TokenRefused` otherwise."""
    async with services.db.session() as session:
        invite = await find_invite(session, services.secrets, token)
        return invite, await session.get(Workspace, invite.workspace_id)


async def accept(services: Services, *, token: str, user_id: str) -> tuple[Workspace, Membership]:
    """Accept the invite of ``token`` as the signed-in user it was sent to."""
    async with services.db.transaction() as session:
        user = await _user(session, user_id)
        invite, membership = await accept_invite(session, services.secrets, token=token, user=user)
        return await session.get(Workspace, invite.workspace_id), membership


async def invite(services: Services, *, workspace_id: str, email: str, role: str, hours: int | None, actor: Actor) -> tuple[Invite, str]:
    """Invite ``email`` for ``hours`` (default ``[workspaces] invite_ttl_hours``) on behalf of
    ``actor`` (the audit trail's ``invite.created``) and enqueue its email; answers the invite and
    its token."""
    hours = hours or services.settings.workspaces.invite_ttl_hours
    if not 0 < hours <= MAX_INVITE_HOURS:
        raise Invalid(f"Validation failed: expiresInHours must be between 1 and {MAX_INVITE_HOURS}")
    async with services.db.transaction(tenant=workspace_id) as session:
        try:
            row, token = await create_invite(
                session, services.secrets, workspace_id=workspace_id, email=email, role=role, ttl=timedelta(hours=hours), invited_by=actor.id
            )
        except WorkspaceError as error:
            raise _invalid(error) from None
        details = {"email": row.email, "role": row.role, "expiresAt": row.expires_at.isoformat()}
        await record(session, workspace_id=workspace_id, actor=actor, action="invite.created", target_id=row.id, details=details)
        services.jobs.enqueue(session, INVITE_EMAIL_JOB, {"invite_id": row.id, "token": services.secrets.encrypt(token)}, workspace_id=workspace_id)
    return row, token


async def public_workspace(services: Services, slug: str) -> tuple[Workspace, int]:
    """The workspace of ``slug`` and its member count; NotFound when there is none."""
    async with services.db.session() as session:
        workspace = await find_workspace(session, slug=slug)
        if workspace is None:
            raise NotFound("Workspace not found")
        return workspace, await member_count(session, workspace.id)


async def ask_to_join(services: Services, *, user_id: str, workspace_id: str | None, slug: str | None, message: str | None) -> JoinRequest:
    """A pending join request of the signed-in user to the workspace of ``workspace_id`` or ``slug``."""
    if not workspace_id and not slug:
        raise Invalid("Validation failed: workspaceId or slug is required")
    async with services.db.transaction() as session:
        await _user(session, user_id)
        workspace = await find_workspace(session, workspace_id=workspace_id, slug=slug)
        if workspace is None:
            raise NotFound("Workspace not found")
        return await request_join(session, workspace_id=workspace.id, user_id=user_id, message=message)


async def join_with_link(services: Services, *, workspace_id: str, token: str, user_id: str) -> tuple[Workspace, Membership, bool]:
    """Join through the workspace's shareable link as the signed-in user; ``joined`` False for a member."""
    async with services.db.transaction() as session:
        await _user(session, user_id)
        membership, joined = await join_by_link(session, services.secrets, workspace_id=workspace_id, token=token, user_id=user_id)
        return await session.get(Workspace, workspace_id), membership, joined


async def join_requests(services: Services, workspace_id: str, *, page: int, limit: int) -> tuple[list[tuple[JoinRequest, User]], int]:
    async with services.db.session(tenant=workspace_id) as session:
        return await pending_join_requests(session, page=page, limit=limit)


async def decide(
    services: Services, *, workspace_id: str, request_id: str, approve: bool, role: str, decided_by: str | None
) -> tuple[JoinRequest, User | None]:
    """Approve or deny a pending join request; NotFound when there is none."""
    async with services.db.transaction(tenant=workspace_id) as session:
        try:
            join = await decide_join_request(session, workspace_id=workspace_id, request_id=request_id, approve=approve, role=role, decided_by=decided_by)
        except WorkspaceError as error:
            raise _invalid(error) from None
        if join is None:
            raise NotFound("Join request not found")
        return join, await session.get(User, join.user_id)


async def new_link(services: Services, *, workspace_id: str, role: str, hours: int | None, created_by: str | None) -> tuple[ShareableLink, str]:
    """A new shareable link (the previous one stops working) valid for ``hours`` (None: no expiry)."""
    if hours is not None and hours <= 0:
        raise Invalid("Validation failed: expiresInHours must be a positive integer")
    async with services.db.transaction(tenant=workspace_id) as session:
        try:
            return await create_link(
                session, services.secrets, workspace_id=workspace_id, role=role, ttl=timedelta(hours=hours) if hours else None, created_by=created_by
            )
        except WorkspaceError as error:
            raise _invalid(error) from None


async def revoke(services: Services, workspace_id: str) -> None:
    """Revoke the workspace's shareable link; NotFound when there is no active one."""
    async with services.db.transaction(tenant=workspace_id) as session:
        if not await revoke_link(session, workspace_id):
            raise NotFound("No active shareable link")


async def members_of(services: Services, workspace_id: str) -> list[tuple[User, str]]:
    """The workspace's members with their role, oldest membership first."""
    async with services.db.session() as session:
        rows = await session.execute(
            select(User, Membership.role)
            .join(Membership, Membership.user_id == User.id)
            .where(Membership.workspace_id == workspace_id)
            .order_by(Membership.created_at, User.id)
        )
        return [(user, role) for user, role in rows.all()]


async def revoke_invite(services: Services, *, workspace_id: str, invite_id: str, actor: Actor) -> None:
    """Withdraw an invite not accepted yet, on behalf of ``actor`` (the audit trail's
    ``invite.revoked``): the invite is deleted, so its link answers as an unknown invite and its
    email, if not sent yet, is not sent. NotFound for an invite of another workspace, an accepted
    one or none."""
    async with services.db.transaction(tenant=workspace_id) as session:
        invite = await session.scalar(select(Invite).where(Invite.id == invite_id, Invite.accepted_at.is_(None)).with_for_update())
        if invite is None:
            raise NotFound("Invite not found")
        details = {"email": invite.email, "role": invite.role}
        await session.delete(invite)
        await record(session, workspace_id=workspace_id, actor=actor, action="invite.revoked", target_id=invite_id, details=details)


async def open_invites(services: Services, workspace_id: str) -> list[Invite]:
    """The workspace's invites not accepted and not expired, newest first."""
    async with services.db.session(tenant=workspace_id) as session:
        rows = await session.scalars(
            select(Invite).where(Invite.accepted_at.is_(None), Invite.expires_at > utcnow()).order_by(Invite.created_at.desc(), Invite.id)
        )
        return list(rows)


async def _role_of(session: AsyncSession, workspace_id: str, user_id: str) -> str | None:
    return await session.scalar(select(Membership.role).where(Membership.workspace_id == workspace_id, Membership.user_id == user_id))


async def change_member_role(services: Services, *, workspace_id: str, user_id: str, role: str, actor: Actor) -> tuple[User, str]:
    """Give the member ``user_id`` the role ``role`` on behalf of ``actor`` (the audit trail's
    ``member.role_changed``, when the role differs); answers the user and the role. Invalid for an
    unknown role, NotFound for a user who is not a member, Conflict for the last admin's demotion."""
    async with services.db.transaction() as session:
        await _lock_members(session, workspace_id)
        before = await _role_of(session, workspace_id, user_id)
        try:
            membership = await set_member_role(session, workspace_id=workspace_id, user_id=user_id, role=role)
        except WorkspaceError as error:
            raise _invalid(error) from None
        user = await session.get(User, user_id)
        if before != membership.role:
            details = {"email": user.email, "from": before, "to": membership.role}
            await record(session, workspace_id=workspace_id, actor=actor, action="member.role_changed", target_id=user_id, details=details)
        return user, membership.role


async def remove_member(services: Services, *, workspace_id: str, user_id: str, actor: Actor) -> None:
    """Remove the member ``user_id`` on behalf of ``actor`` (the audit trail's ``member.removed``):
    NotFound for a user who is not a member, Conflict for the last admin. Their console pages of the
    workspace are refused from their next request."""
    async with services.db.transaction() as session:
        await _lock_members(session, workspace_id)
        role = await _role_of(session, workspace_id, user_id)
        await delete_member(session, workspace_id=workspace_id, user_id=user_id)
        email = await session.scalar(select(User.email).where(User.id == user_id))
        await record(session, workspace_id=workspace_id, actor=actor, action="member.removed", target_id=user_id, details={"email": email, "role": role})
