"""Workspaces over HTTP (spec 4.21, prefix /connect/v1/workspaces).

Who may call what:

- ``GET /``: any credential: a user's token lists the user's memberships, an API key (or a client's
  token) its own workspace.
- ``POST /``: the operator's admin API key (server-to-server; ``ownerUserId`` or ``ownerEmail``
  makes a user its admin), or a signed-in user, who becomes its admin. Idempotent by ``externalId``.
- ``invite/validate``, ``public/{slug}``: no credential (the token or slug is the secret / public).
- ``invite/accept``, ``join/request``, ``join/link``: a signed-in user's access token.
- ``/{id}/...`` administration, the audit trail included: ``workspace.admin`` on that workspace
  (another one answers 404).
"""

from __future__ import annotations

from aiohttp import web

from patchbay.core.accounts.auth import is_operator, require_user
from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import page_params, query_int, read_body
from patchbay.core.http.errors import ApiError, bad_request, forbidden, not_found
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import Principal, authenticate, principal_of, refused, requires
from patchbay.core.timeline import Key
from patchbay.core.timeutil import iso
from patchbay.core.workspaces import service
from patchbay.core.workspaces.api_models import (
    ApproveJoinDto,
    AuditEventPage,
    ChangeRoleDto,
    CreatedInvite,
    CreatedWorkspace,
    CreateInviteDto,
    CreateWorkspaceDto,
    InviteRevoked,
    InviteValidation,
    JoinByLinkDto,
    JoinedByLink,
    JoinedWorkspace,
    JoinRequestOut,
    JoinRequestPage,
    LinkRevoked,
    MemberOut,
    MemberPage,
    MemberRemoved,
    PublicWorkspace,
    RequestJoinDto,
    ShareableLinkDto,
    ShareableLinkOut,
    WorkspacePage,
    audit_event_json,
    invite_json,
    join_request_json,
    member_json,
    workspace_json,
)
from patchbay.core.workspaces.audit import ACTIONS, Actor, events_page
from patchbay.core.workspaces.mail import invite_url, link_url

routes = web.RouteTableDef()
PREFIX = "/connect/v1/workspaces"


def _refused(error: service.TokenRefused) -> ApiError:
    status = {"not_found": 404, "wrong_user": 403}.get(error.reason, 410)
    return ApiError(status, str(error))


def _admin_of(request: web.Request) -> str:
    """The workspace id of the path, which must be the caller's (``workspace.admin`` checked by
    ``requires``); another workspace answers 404."""
    workspace_id = request.match_info["id"]
    if principal_of(request).workspace_id != workspace_id:
        raise not_found("Workspace not found")
    return workspace_id


# ---------------------------------------------------------------------------------------------
# Listing and creating
# ---------------------------------------------------------------------------------------------


@routes.get(PREFIX)
@query(**PAGE_QUERY)
@returns(WorkspacePage)
async def list_workspaces(request: web.Request) -> web.Response:
    """The caller's workspaces: a user's memberships (with the user's ``role``), or an API key's own
    workspace."""
    principal = await authenticate(request)
    if principal is None:
        raise await refused(request)
    page, limit = page_params(request)
    items = [workspace_json(workspace, role) for workspace, role in await service.workspaces_of(request.app[SERVICES], principal)]
    return reply(request, {"data": items[(page - 1) * limit : page * limit], "page": page, "limit": limit, "total": len(items)})


async def _server_caller(request: web.Request) -> Principal | None:
    """A workspace's API key or client_credentials token (server-to-server, spec 4.21), which must
    hold ``workspace.admin``; None for any other caller."""
    principal = await authenticate(request)
    if principal is None or principal.workspace_id is None:
        return None
    if principal.kind == "access_token" and principal.subject != principal.client_id:
        return None  # a user's token: the signed-in-user path
    if not principal.can("workspace.admin"):
        raise forbidden("Missing permission: workspace.admin")
    return principal


@routes.post(PREFIX)
@accepts(CreateWorkspaceDto)
@returns(CreatedWorkspace, status=201, description="Created, or the workspace of this externalId")
async def create_workspace(request: web.Request) -> web.Response:
    """Create a workspace (server-to-server with the admin API key or a workspace's credential
    holding ``workspace.admin``, or a signed-in user); idempotent by externalId. A workspace's
    credential may name as owner only a member of its own workspace."""
    operator = is_operator(request)
    server = None if operator else await _server_caller(request)
    principal = None if operator or server else await require_user(request)
    body = await read_body(request, CreateWorkspaceDto)
    if body.plan and not operator:
        raise bad_request("Validation failed: plan can only be set with the admin API key")
    services = request.app[SERVICES]
    named = {"owner_user_id": body.ownerUserId, "owner_email": body.ownerEmail} if operator or server else {}
    workspace, created = await service.open_workspace(
        services,
        name=body.name,
        plan=body.plan or services.settings.workspaces.default_plan,
        external_id=body.externalId,
        user_id=principal.subject if principal else None,
        owners_workspace=server.workspace_id if server else None,
        **named,
    )
    return reply(request, {**workspace_json(workspace), "created": created}, status=201)


# ---------------------------------------------------------------------------------------------
# Invites
# ---------------------------------------------------------------------------------------------


@routes.get(PREFIX + "/invite/validate/{token}")
@returns(InviteValidation)
async def validate_invite(request: web.Request) -> web.Response:
    """Validate an invite token: 200 with the workspace, email and role; 404 unknown, 410 used or
    expired."""
    try:
        invite, workspace = await service.invite_of(request.app[SERVICES], request.match_info["token"])
    except service.TokenRefused as error:
        raise _refused(error) from None
    return reply(
        request,
        {
            "valid": True,
            "workspace": {"id": workspace.id, "name": workspace.name, "slug": workspace.slug},
            "email": invite.email,
            "role": invite.role,
            "expiresAt": iso(invite.expires_at),
        },
    )


@routes.post(PREFIX + "/invite/accept/{token}")
@returns(JoinedWorkspace, status=201, description="Joined")
async def accept_invite(request: web.Request) -> web.Response:
    """Accept an invite as the signed-in user it was sent to (single use)."""
    principal = await require_user(request)
    try:
        workspace, membership = await service.accept(request.app[SERVICES], token=request.match_info["token"], user_id=principal.subject)
    except service.TokenRefused as error:
        raise _refused(error) from None
    return reply(request, {"workspace": workspace_json(workspace, membership.role), "role": membership.role}, status=201)


@routes.post(PREFIX + "/{id}/invite")
@accepts(CreateInviteDto)
@returns(CreatedInvite, status=201, description="Invited")
@requires("workspace.admin")
async def create_invite(request: web.Request) -> web.Response:
    """Invite an email address (``{email, role?, expiresInHours?}``); the invite is emailed."""
    workspace_id = _admin_of(request)
    body = await read_body(request, CreateInviteDto)
    services = request.app[SERVICES]
    invite, token = await service.invite(
        services, workspace_id=workspace_id, email=body.email, role=body.role, hours=body.expiresInHours, actor=Actor.of(principal_of(request))
    )
    return reply(request, {**invite_json(invite), "inviteUrl": invite_url(services.settings, token=token, workspace_id=workspace_id)}, status=201)


# ---------------------------------------------------------------------------------------------
# Members: listed, their role changed, removed (the workspace keeps an admin)
# ---------------------------------------------------------------------------------------------


@routes.get(PREFIX + "/{id}/members")
@query(**PAGE_QUERY)
@returns(MemberPage)
@requires("workspace.admin")
async def list_members(request: web.Request) -> web.Response:
    """The workspace's members with their roles, oldest membership first."""
    workspace_id = _admin_of(request)
    page, limit = page_params(request)
    members = await service.members_of(request.app[SERVICES], workspace_id)
    items = [member_json(user, role) for user, role in members[(page - 1) * limit : page * limit]]
    return reply(request, {"data": items, "page": page, "limit": limit, "total": len(members)})


@routes.patch(PREFIX + "/{id}/members/{userId}")
@accepts(ChangeRoleDto)
@returns(MemberOut)
@requires("workspace.admin")
async def change_member_role(request: web.Request) -> web.Response:
    """Change a member's role (``{role}``); 404 for a user who is not a member, 409 for the
    workspace's last admin."""
    body = await read_body(request, ChangeRoleDto)
    workspace_id = _admin_of(request)
    user, role = await service.change_member_role(
        request.app[SERVICES], workspace_id=workspace_id, user_id=request.match_info["userId"], role=body.role, actor=Actor.of(principal_of(request))
    )
    return reply(request, member_json(user, role))


@routes.delete(PREFIX + "/{id}/members/{userId}")
@returns(MemberRemoved)
@requires("workspace.admin")
async def remove_member(request: web.Request) -> web.Response:
    """Remove a member (an admin may remove themself while another admin remains); 404 for a user
    who is not a member, 409 for the workspace's last admin."""
    workspace_id = _admin_of(request)
    user_id = request.match_info["userId"]
    await service.remove_member(request.app[SERVICES], workspace_id=workspace_id, user_id=user_id, actor=Actor.of(principal_of(request)))
    return reply(request, {"removed": True, "userId": user_id})


@routes.delete(PREFIX + "/{id}/invites/{inviteId}")
@returns(InviteRevoked)
@requires("workspace.admin")
async def revoke_invite(request: web.Request) -> web.Response:
    """Withdraw an invite not accepted yet: its link answers 404 from now on and its email, if not
    sent yet, is not sent; 404 for an accepted invite or one of another workspace."""
    workspace_id = _admin_of(request)
    invite_id = request.match_info["inviteId"]
    await service.revoke_invite(request.app[SERVICES], workspace_id=workspace_id, invite_id=invite_id, actor=Actor.of(principal_of(request)))
    return reply(request, {"revoked": True, "inviteId": invite_id})


# ---------------------------------------------------------------------------------------------
# Public information and joining
# ---------------------------------------------------------------------------------------------


@routes.get(PREFIX + "/public/{slug}")
@returns(PublicWorkspace)
async def public_info(request: web.Request) -> web.Response:
    """Public information of a workspace by slug (no credential)."""
    workspace, members = await service.public_workspace(request.app[SERVICES], request.match_info["slug"])
    return reply(request, {"id": workspace.id, "name": workspace.name, "slug": workspace.slug, "memberCount": members, "createdAt": iso(workspace.created_at)})


@routes.post(PREFIX + "/join/request")
@accepts(RequestJoinDto)
@returns(JoinRequestOut, status=201, description="Requested")
async def request_join(request: web.Request) -> web.Response:
    """Ask to join a workspace (``{workspaceId | slug, message?}``) as the signed-in user."""
    principal = await require_user(request)
    body = await read_body(request, RequestJoinDto)
    join = await service.ask_to_join(request.app[SERVICES], user_id=principal.subject, workspace_id=body.workspaceId, slug=body.slug, message=body.message)
    return reply(request, join_request_json(join), status=201)


@routes.post(PREFIX + "/join/link/{workspaceId}")
@query(token={"type": "string"})
@accepts(JoinByLinkDto, required=False)
@returns(JoinedByLink, status=201, description="Joined, or already a member")
async def join_by_link(request: web.Request) -> web.Response:
    """Join through a shareable link as the signed-in user; the token in ``{token}`` or ``?token=``."""
    principal = await require_user(request)
    token = request.query.get("token")
    if not token and (await request.read()).strip():
        token = (await read_body(request, JoinByLinkDto)).token
    if not token:
        raise bad_request("Validation failed: token is required")
    try:
        workspace, membership, joined = await service.join_with_link(
            request.app[SERVICES], workspace_id=request.match_info["workspaceId"], token=token, user_id=principal.subject
        )
    except service.TokenRefused as error:
        raise _refused(error) from None
    return reply(request, {"workspace": workspace_json(workspace, membership.role), "role": membership.role, "joined": joined}, status=201)


# ---------------------------------------------------------------------------------------------
# Administration: join requests and the shareable link
# ---------------------------------------------------------------------------------------------


@routes.get(PREFIX + "/{id}/join-requests")
@query(**PAGE_QUERY)
@returns(JoinRequestPage)
@requires("workspace.admin")
async def list_join_requests(request: web.Request) -> web.Response:
    """Pending join requests of the workspace, oldest first."""
    workspace_id = _admin_of(request)
    page, limit = page_params(request)
    rows, total = await service.join_requests(request.app[SERVICES], workspace_id, page=page, limit=limit)
    return reply(request, {"data": [join_request_json(r, u) for r, u in rows], "page": page, "limit": limit, "total": total})


async def _decide(request: web.Request, approve: bool) -> web.Response:
    workspace_id = _admin_of(request)
    role = "viewer"
    if approve and (await request.read()).strip():
        role = (await read_body(request, ApproveJoinDto)).role
    join, user = await service.decide(
        request.app[SERVICES],
        workspace_id=workspace_id,
        request_id=request.match_info["requestId"],
        approve=approve,
        role=role,
        decided_by=principal_of(request).subject,
    )
    return reply(request, join_request_json(join, user), status=201)


@routes.post(PREFIX + "/{id}/join-requests/{requestId}/approve")
@accepts(ApproveJoinDto, required=False)
@returns(JoinRequestOut, status=201, description="Approved")
@requires("workspace.admin")
async def approve_join_request(request: web.Request) -> web.Response:
    """Approve a join request; the user becomes a member (``{role?}``, default viewer)."""
    return await _decide(request, True)


@routes.post(PREFIX + "/{id}/join-requests/{requestId}/deny")
@returns(JoinRequestOut, status=201, description="Denied")
@requires("workspace.admin")
async def deny_join_request(request: web.Request) -> web.Response:
    """Deny a join request."""
    return await _decide(request, False)


@routes.post(PREFIX + "/{id}/shareable-link")
@accepts(ShareableLinkDto, required=False)
@returns(ShareableLinkOut, status=201, description="Generated")
@requires("workspace.admin")
async def create_shareable_link(request: web.Request) -> web.Response:
    """Generate the shareable link (``{role?, expiresInHours?}``); the previous one stops working."""
    workspace_id = _admin_of(request)
    body = await read_body(request, ShareableLinkDto) if (await request.read()).strip() else ShareableLinkDto()
    services = request.app[SERVICES]
    link, token = await service.new_link(
        services, workspace_id=workspace_id, role=body.role, hours=body.expiresInHours, created_by=principal_of(request).subject
    )
    return reply(
        request,
        {
            "url": link_url(services.settings, token=token, workspace_id=workspace_id),
            "token": token,
            "role": link.role,
            "expiresAt": iso(link.expires_at),
            "createdAt": iso(link.created_at),
        },
        status=201,
    )


@routes.delete(PREFIX + "/{id}/shareable-link")
@returns(LinkRevoked)
@requires("workspace.admin")
async def revoke_shareable_link(request: web.Request) -> web.Response:
    """Revoke the shareable link."""
    workspace_id = _admin_of(request)
    await service.revoke(request.app[SERVICES], workspace_id)
    return reply(request, {"revoked": True})


# ---------------------------------------------------------------------------------------------
# The audit trail: who changed the members, invites and API keys (after ``/public/{slug}``, so
# that a workspace's slug is never shadowed)
# ---------------------------------------------------------------------------------------------


@routes.get(PREFIX + "/{id}/audit-events")
@query(
    limit={"type": "integer", "minimum": 1, "maximum": 200, "default": 50},
    cursor={"type": "string"},
    action={"type": "string", "enum": list(ACTIONS)},
)
@returns(AuditEventPage)
@requires("workspace.admin")
async def list_audit_events(request: web.Request) -> web.Response:
    """The workspace's audit trail, newest first (cursor list): role changes and removals of
    members, invites made, API keys made and revoked, each with who did it; ``action`` keeps one
    kind."""
    workspace_id = _admin_of(request)
    limit = query_int(request, "limit", 50, maximum=200)
    action = request.query.get("action") or None
    if action is not None and action not in ACTIONS:
        raise bad_request(f"Validation failed: action must be one of {', '.join(ACTIONS)}")
    cursor = request.query.get("cursor")
    before = Key.decode(cursor) if cursor else None
    events, after = await events_page(request.app[SERVICES], workspace_id=workspace_id, action=action, before=before, limit=limit)
    return reply(request, {"data": [audit_event_json(event) for event in events], "nextCursor": after.encode() if after else None})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
