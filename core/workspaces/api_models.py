"""The bodies the workspace routes (``core.workspaces.routes``) read and answer: the models that
validate and serialize them are the ones ``/openapi.json`` publishes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from patchbay.core.http.responses import cursor_page_of, page_of, response_model
from patchbay.core.timeutil import iso
from patchbay.core.users.models import User
from patchbay.core.workspaces import service
from patchbay.core.workspaces.audit import WorkspaceAuditEvent
from patchbay.core.workspaces.models import ROLES, Invite, JoinRequest, Workspace

MemberRole = Literal[ROLES]  # type: ignore[valid-type]

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class CreateWorkspaceDto:
    """``plan`` with the operator's admin API key only; ``ownerUserId`` or ``ownerEmail`` names the
    user who becomes its admin."""

    name: str
    externalId: str | None = None
    plan: str | None = None
    ownerUserId: str | None = None
    ownerEmail: str | None = None


@dataclass
class CreateInviteDto:
    email: str
    role: str = "viewer"
    expiresInHours: int | None = None


@dataclass
class ChangeRoleDto:
    """The member's new role."""

    role: MemberRole


@dataclass
class RequestJoinDto:
    """``workspaceId`` or ``slug`` names the workspace."""

    workspaceId: str | None = None
    slug: str | None = None
    message: str | None = None


@dataclass
class JoinByLinkDto:
    """The shareable link's token (or ``?token=``)."""

    token: str | None = None


@dataclass
class ApproveJoinDto:
    """The role the approved user gets."""

    role: str = "viewer"


@dataclass
class ShareableLinkDto:
    """The role the link grants; ``expiresInHours`` absent: the link does not expire."""

    role: str = "viewer"
    expiresInHours: int | None = None


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class WorkspaceOut:
    id: str
    name: str
    slug: str | None
    plan: str
    externalId: str | None
    createdAt: str | None
    updatedAt: str | None


@response_model
class MemberWorkspace(WorkspaceOut):
    """A workspace with the signed-in user's role in it."""

    role: str


@response_model
class CreatedWorkspace(WorkspaceOut):
    """``created`` is false when a workspace of this ``externalId`` already existed."""

    created: bool


@response_model
class WorkspacePage:
    """The caller's workspaces: with the user's ``role`` for a user, without for an API key."""

    data: list[MemberWorkspace | WorkspaceOut]
    page: int
    limit: int
    total: int


@response_model
class CreatedInvite:
    """An invite with its URL (the only time its token is shown)."""

    id: str
    workspaceId: str
    email: str
    role: str
    status: str
    expiresAt: str | None
    invitedBy: str | None
    acceptedAt: str | None
    createdAt: str | None
    inviteUrl: str


@response_model
class InvitedWorkspace:
    id: str
    name: str
    slug: str | None


@response_model
class InviteValidation:
    valid: bool
    workspace: InvitedWorkspace
    email: str
    role: str
    expiresAt: str | None


@response_model
class JoinedWorkspace:
    """The workspace joined through an invite and the role in it."""

    workspace: MemberWorkspace
    role: str


@response_model
class JoinedByLink(JoinedWorkspace):
    """``joined`` is false when the user was a member already."""

    joined: bool


@response_model
class PublicWorkspace:
    id: str
    name: str
    slug: str | None
    memberCount: int
    createdAt: str | None


@response_model
class JoinRequestOut:
    """``email`` and ``name`` are the requesting user's (null where not shown)."""

    id: str
    workspaceId: str
    userId: str
    email: str | None
    name: str | None
    message: str | None
    status: str
    role: str | None
    decidedBy: str | None
    decidedAt: str | None
    createdAt: str | None


JoinRequestPage = page_of(JoinRequestOut)


@response_model
class ShareableLinkOut:
    """The link and its token, shown once."""

    url: str
    token: str
    role: str
    expiresAt: str | None
    createdAt: str | None


@response_model
class LinkRevoked:
    revoked: bool


@response_model
class MemberOut:
    """A member of the workspace: the user and their role."""

    userId: str
    email: str
    name: str | None
    role: str


MemberPage = page_of(MemberOut)


@response_model
class InviteRevoked:
    revoked: bool
    inviteId: str


@response_model
class MemberRemoved:
    removed: bool
    userId: str


@response_model
class AuditEventOut:
    """An administrative change of the workspace: who (``actorKind`` user, api_key, operator or
    system; ``actorLabel`` an email or a key's display prefix), what (``action``, on ``targetId``:
    a user, an invite or a key) and ``details`` (such as ``{"from": "manager", "to": "viewer"}``);
    never a secret."""

    id: str
    workspaceId: str
    createdAt: str
    actorKind: str
    actorId: str | None
    actorLabel: str | None
    action: str
    targetId: str | None
    details: dict[str, Any]


AuditEventPage = cursor_page_of(AuditEventOut)


# ---------------------------------------------------------------------------------------------
# Rows as answered
# ---------------------------------------------------------------------------------------------


def workspace_json(workspace: Workspace, role: str | None = None) -> dict[str, Any]:
    """A :class:`WorkspaceOut`, or a :class:`MemberWorkspace` with ``role``."""
    body = {
        "id": workspace.id,
        "name": workspace.name,
        "slug": workspace.slug,
        "plan": workspace.plan,
        "externalId": workspace.external_id,
        "createdAt": iso(workspace.created_at),
        "updatedAt": iso(workspace.updated_at),
    }
    if role is not None:
        body["role"] = role
    return body


def member_json(user: User, role: str) -> dict[str, Any]:
    return {"userId": user.id, "email": user.email, "name": user.name, "role": role}


def audit_event_json(event: WorkspaceAuditEvent) -> dict[str, Any]:
    return {
        "id": event.id,
        "workspaceId": event.workspace_id,
        "createdAt": iso(event.created_at),
        "actorKind": event.actor_kind,
        "actorId": event.actor_id,
        "actorLabel": event.actor_label,
        "action": event.action,
        "targetId": event.target_id,
        "details": event.details,
    }


def invite_json(invite: Invite) -> dict[str, Any]:
    return {
        "id": invite.id,
        "workspaceId": invite.workspace_id,
        "email": invite.email,
        "role": invite.role,
        "status": "accepted" if invite.accepted_at else service.invite_state(invite),
        "expiresAt": iso(invite.expires_at),
        "invitedBy": invite.invited_by,
        "acceptedAt": iso(invite.accepted_at),
        "createdAt": iso(invite.created_at),
    }


def join_request_json(request: JoinRequest, user: User | None = None) -> dict[str, Any]:
    return {
        "id": request.id,
        "workspaceId": request.workspace_id,
        "userId": request.user_id,
        "email": user.email if user else None,
        "name": user.name if user else None,
        "message": request.message,
        "status": request.status,
        "role": request.role,
        "decidedBy": request.decided_by,
        "decidedAt": iso(request.decided_at),
        "createdAt": iso(request.created_at),
    }
