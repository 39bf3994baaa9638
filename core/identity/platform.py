"""Platform REST for app clients (5B point 4): ``/api/v1/organizations/*`` and ``/api/v1/users/*``.

Callers are app backends: a client_credentials access token, or ``x-client-id`` and
``x-client-secret``, of a client the operator marked ``platform`` (any other client gets 403). A
token issued to a user (authorization_code) answers 401 here. A client bound to a workspace sees and
changes only that organization and its members; an unbound platform client sees all of them."""

from __future__ import annotations

import functools
from typing import Any

import attrs
from aiohttp import web
from patchbay.core.appkeys import DB, SETTINGS
from patchbay.core.http.bodies import page_params, read_object, structure
from patchbay.core.http.errors import bad_request, conflict, forbidden, not_found, unauthorized
from patchbay.core.http.lookups import get_or_404
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.identity.clients import Client
from patchbay.core.identity import platform_service as queries
from patchbay.core.identity.http import load_client
from patchbay.core.identity.platform_models import (
    AddMemberDto, CreateOrganizationDto, CreateUserDto, MembershipList, Organization, OrganizationMembership, OrganizationPage, PlatformUser,
    PlatformUserPage, UpdateOrganizationDto, UpdateUserDto,
)  # fmt: skip
from patchbay.core.identity.session import current_session
from patchbay.core.security.auth import verify_access_token
from patchbay.core.security.signing_keys import InvalidToken
from patchbay.core.timeutil import iso
from patchbay.core.users.service import UserError, change_password, create_user
from patchbay.core.users.models import User
from patchbay.core.workspaces.api_models import workspace_json
from patchbay.core.workspaces.models import PLANS, ROLES, Membership, Workspace
from patchbay.core.workspaces.service import WorkspaceError, add_member, create_workspace

routes = web.RouteTableDef()
APP_CLIENT = web.RequestKey("oidc_app_client", object)


@attrs.frozen
class AppCaller:
    client_id: str | None
    workspace_id: str | None
    user_id: str | None = None  # a signed-in user (session cookie): reads of their own records only


async def _caller(request: web.Request) -> AppCaller:
    client_id, secret = request.headers.get("x-client-id"), request.headers.get("x-client-secret")
    if client_id and secret:
        client: Client | None = await load_client(request, client_id)
        if client is None or client.is_public or not client.check_client_secret(secret):
            raise unauthorized()
        return _trusted(client)
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise unauthorized()
    try:
        claims = await verify_access_token(request.app, token.strip())
    except InvalidToken:
        raise unauthorized() from None
    if not claims.get("client_id") or claims.get("sub") != claims.get("client_id"):
        raise unauthorized()  # a user-context token: this API is for app backends
    client = await load_client(request, claims["client_id"])
    if client is None:
        raise unauthorized()
    return _trusted(client)


def _trusted(client: Client) -> AppCaller:
    """Platform trust is granted by the operator (``patchbay clients create --platform``), never
    self-served: an authenticated client without it is refused."""
    if not client.is_platform:
        raise forbidden("This client is not trusted with the platform API")
    return AppCaller(client.client_id, client.workspace_id)


def app_client(handler=None, *, users: bool = False):
    """App clients only; with ``users=True`` also the identity provider's session cookie (5B point
    4: user-context calls use the session), for reading the user's own records."""

    def decorate(handler):
        @functools.wraps(handler)
        async def wrapper(request: web.Request) -> web.StreamResponse:
            session = await current_session(request) if users else None
            has_credentials = request.headers.get("Authorization") or request.headers.get("x-client-id")
            if session is not None and not has_credentials:
                request[APP_CLIENT] = AppCaller(None, None, session.user_id)
            else:
                request[APP_CLIENT] = await _caller(request)
            return await handler(request)

        return wrapper

    return decorate(handler) if handler is not None else decorate


def user_json(row: User) -> dict[str, Any]:
    return {"id": row.id, "email": row.email, "emailVerified": row.email_verified, "name": row.name, "givenName": row.given_name,
            "familyName": row.family_name, "picture": row.picture, "phoneNumber": row.phone_number, "userType": row.user_type,
            "createdAt": iso(row.created_at), "updatedAt": iso(row.updated_at)}  # fmt: skip


def membership_json(row: Membership) -> dict[str, Any]:
    return {"organizationId": row.workspace_id, "userId": row.user_id, "role": row.role, "createdAt": iso(row.created_at)}


def _visible_org(caller: AppCaller, organization_id: str) -> None:
    if caller.workspace_id is not None and caller.workspace_id != organization_id:
        raise not_found("Organization not found")


def _own_id(caller: AppCaller, user_id: str) -> str:
    """``me`` names the signed-in user; a user may read only their own records."""
    if caller.user_id is None:
        return user_id
    if user_id not in ("me", caller.user_id):
        raise not_found("User not found")
    return caller.user_id


async def _get_org(session, caller: AppCaller, organization_id: str) -> Workspace:
    _visible_org(caller, organization_id)
    row = await get_or_404(session, Workspace, organization_id, "Organization not found")
    return row


async def _get_user(session, caller: AppCaller, user_id: str) -> User:
    row = await queries.visible_user(session, _own_id(caller, user_id), workspace_id=caller.workspace_id)
    if row is None:
        raise not_found("User not found")
    return row


async def _check_bound_client_may_change(session, caller: AppCaller, user: User, body: dict[str, Any]) -> None:
    """A client bound to one organization changes only its own users: those it created, while they
    belong to no other organization; and it never vouches for an email address."""
    if "emailVerified" in body:
        raise forbidden("A client bound to an organization cannot change whether an email address is verified")
    if user.created_by_client_id != caller.client_id or await queries.member_elsewhere(session, user.id, caller.workspace_id):
        raise forbidden("A client bound to an organization can change only the users it created, while they belong to no other organization")


# -- organizations --------------------------------------------------------------------------------


@routes.get("/api/v1/organizations")
@query(**PAGE_QUERY)
@returns(OrganizationPage)
@app_client
async def list_organizations(request: web.Request) -> web.Response:
    """List organizations (a workspace-bound client sees its own)."""
    caller: AppCaller = request[APP_CLIENT]
    page, limit = page_params(request)
    async with request.app[DB].session() as session:
        rows, total = await queries.organization_page(session, workspace_id=caller.workspace_id, page=page, limit=limit)
    return reply(request, {"data": [workspace_json(r) for r in rows], "page": page, "limit": limit, "total": total})


@routes.post("/api/v1/organizations")
@accepts(CreateOrganizationDto)
@returns(Organization, status=201, description="Created")
@app_client
async def create_organization(request: web.Request) -> web.Response:
    """Create an organization (platform clients only); ``plan`` defaults to the deployment's
    ``[workspaces] default_plan``, as for workspaces made any other way."""
    caller: AppCaller = request[APP_CLIENT]
    if caller.workspace_id is not None:
        raise forbidden("A client bound to an organization cannot create organizations")
    dto = structure(await read_object(request), CreateOrganizationDto)
    if not dto.name.strip():
        raise bad_request("Validation failed: name is required")
    async with request.app[DB].transaction() as session:
        try:
            row, _ = await create_workspace(session, name=dto.name, plan=dto.plan or request.app[SETTINGS].workspaces.default_plan, external_id=dto.externalId)
        except WorkspaceError as error:
            raise bad_request(f"Validation failed: {error}") from None
    return reply(request, workspace_json(row), status=201)


@routes.get("/api/v1/organizations/{id}")
@returns(Organization)
@app_client
async def get_organization(request: web.Request) -> web.Response:
    """One organization."""
    async with request.app[DB].session() as session:
        row = await _get_org(session, request[APP_CLIENT], request.match_info["id"])
    return reply(request, workspace_json(row))


@routes.patch("/api/v1/organizations/{id}")
@accepts(UpdateOrganizationDto)
@returns(Organization)
@app_client
async def update_organization(request: web.Request) -> web.Response:
    """Rename an organization or change its plan (plans are the operator's: unbound clients only)."""
    caller: AppCaller = request[APP_CLIENT]
    body = await read_object(request)
    dto = structure(body, UpdateOrganizationDto)
    if caller.workspace_id is not None and "plan" in body:
        raise forbidden("A client bound to an organization cannot change its plan")
    async with request.app[DB].transaction() as session:
        row = await _get_org(session, caller, request.match_info["id"])
        if dto.name is not None:
            if not dto.name.strip():
                raise bad_request("Validation failed: name must not be empty")
            row.name = dto.name.strip()
        if dto.plan is not None:
            if dto.plan not in PLANS:
                raise bad_request(f"Validation failed: plan must be one of {', '.join(PLANS)}")
            row.plan = dto.plan
    return reply(request, workspace_json(row))


@routes.get("/api/v1/organizations/{id}/memberships")
@returns(MembershipList)
@app_client
async def organization_memberships(request: web.Request) -> web.Response:
    """Members of an organization with their roles."""
    async with request.app[DB].session() as session:
        org = await _get_org(session, request[APP_CLIENT], request.match_info["id"])
        rows = await queries.memberships(session, workspace_id=org.id)
    return reply(request, {"data": [membership_json(r) for r in rows]})


@routes.post("/api/v1/organizations/{id}/memberships")
@accepts(AddMemberDto)
@returns(OrganizationMembership, status=201, description="Added")
@app_client
async def add_organization_member(request: web.Request) -> web.Response:
    """Add a user to an organization, or change the role of a member. A workspace-bound client may
    add only the users it created; any other user is not found."""
    caller: AppCaller = request[APP_CLIENT]
    dto = structure(await read_object(request), AddMemberDto)
    if not dto.userId:
        raise bad_request("Validation failed: userId is required")
    async with request.app[DB].transaction() as session:
        org = await _get_org(session, caller, request.match_info["id"])
        if await queries.addable_user(session, dto.userId, workspace_id=caller.workspace_id, client_id=caller.client_id) is None:
            raise not_found("User not found")
        try:
            row = await add_member(session, workspace_id=org.id, user_id=dto.userId, role=dto.role)
        except WorkspaceError as error:
            raise bad_request(f"Validation failed: {error}") from None
    return reply(request, membership_json(row), status=201)


# -- users ----------------------------------------------------------------------------------------


@routes.get("/api/v1/users")
@query(**PAGE_QUERY, email={"type": "string"})
@returns(PlatformUserPage)
@app_client
async def list_users(request: web.Request) -> web.Response:
    """List users (a workspace-bound client sees its organization's members)."""
    caller: AppCaller = request[APP_CLIENT]
    page, limit = page_params(request)
    async with request.app[DB].session() as session:
        rows, total = await queries.user_page(session, workspace_id=caller.workspace_id, email=request.query.get("email"), page=page, limit=limit)
    return reply(request, {"data": [user_json(r) for r in rows], "page": page, "limit": limit, "total": total})


PROFILE_FIELDS = {"name": "name", "givenName": "given_name", "familyName": "family_name", "picture": "picture",
                  "phoneNumber": "phone_number", "userType": "user_type"}  # fmt: skip


@routes.post("/api/v1/users")
@accepts(CreateUserDto)
@returns(PlatformUser, status=201, description="Created")
@app_client
async def create_platform_user(request: web.Request) -> web.Response:
    """Create a user; a workspace-bound client makes it a member (``role``, default viewer)."""
    caller: AppCaller = request[APP_CLIENT]
    body = await read_object(request)
    dto = structure(body, CreateUserDto)
    if not dto.email:
        raise bad_request("Validation failed: email is required")
    profile = {column: getattr(dto, key) for key, column in PROFILE_FIELDS.items() if key in body}
    if dto.role not in ROLES:
        raise bad_request(f"Validation failed: role must be one of {', '.join(ROLES)}")
    async with request.app[DB].transaction() as session:
        try:
            user = await create_user(session, email=dto.email, password=dto.password, created_by_client_id=caller.client_id, **profile)
        except UserError as error:
            raise (conflict(str(error)) if "already exists" in str(error) else bad_request(f"Validation failed: {error}")) from None
        if dto.emailVerified is True:
            if caller.workspace_id is not None:
                raise forbidden("A client bound to an organization cannot mark an email address as verified")
            user.email_verified = True
        if caller.workspace_id is not None:
            await add_member(session, workspace_id=caller.workspace_id, user_id=user.id, role=dto.role)
    return reply(request, user_json(user), status=201)


@routes.get("/api/v1/users/{id}")
@returns(PlatformUser)
@app_client(users=True)
async def get_platform_user(request: web.Request) -> web.Response:
    """One user (``me``: the user of the session cookie)."""
    async with request.app[DB].session() as session:
        row = await _get_user(session, request[APP_CLIENT], request.match_info["id"])
    return reply(request, user_json(row))


@routes.patch("/api/v1/users/{id}")
@accepts(UpdateUserDto)
@returns(PlatformUser)
@app_client
async def update_platform_user(request: web.Request) -> web.Response:
    """Change a user's profile, type or password. A workspace-bound client changes only the users
    it created while they belong to no other workspace, and may not vouch for an email address."""
    caller: AppCaller = request[APP_CLIENT]
    body = await read_object(request)
    dto = structure(body, UpdateUserDto)
    async with request.app[DB].transaction() as session:
        row = await _get_user(session, caller, request.match_info["id"])
        if caller.workspace_id is not None:
            await _check_bound_client_may_change(session, caller, row, body)
        for key, column in PROFILE_FIELDS.items():
            if key in body:
                setattr(row, column, getattr(dto, key))
        if "emailVerified" in body:
            if dto.emailVerified is None:
                raise bad_request("Validation failed: emailVerified must be true or false")
            row.email_verified = dto.emailVerified
        if dto.password is not None:
            if len(dto.password) < 8:
                raise bad_request("Validation failed: password must have at least 8 characters")
            await change_password(session, row, dto.password)
    return reply(request, user_json(row))


@routes.get("/api/v1/users/{id}/memberships")
@returns(MembershipList)
@app_client(users=True)
async def user_memberships(request: web.Request) -> web.Response:
    """The organizations a user belongs to, with roles."""
    caller: AppCaller = request[APP_CLIENT]
    async with request.app[DB].session() as session:
        user = await _get_user(session, caller, request.match_info["id"])
        rows = await queries.memberships(session, user_id=user.id, workspace_id=caller.workspace_id)
    return reply(request, {"data": [membership_json(r) for r in rows]})



