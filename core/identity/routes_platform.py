"""Platform REST for app clients (5B point 4): ``/api/v1/organizations/*`` and ``/api/v1/users/*``,
over the services of ``core.identity.platform`` (who may call, and what each caller sees)."""

from __future__ import annotations

import functools
from typing import Any

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.errors import Unauthenticated
from patchbay.core.http.bodies import page_params, read_object, structure
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.identity import platform
from patchbay.core.identity.platform import AppCaller
from patchbay.core.identity.platform_models import (
    AddMemberDto,
    CreateOrganizationDto,
    CreateUserDto,
    MembershipList,
    Organization,
    OrganizationMembership,
    OrganizationPage,
    PlatformUser,
    PlatformUserPage,
    UpdateOrganizationDto,
    UpdateUserDto,
)
from patchbay.core.identity.session import current_session
from patchbay.core.timeutil import iso
from patchbay.core.users.models import User
from patchbay.core.workspaces.api_models import workspace_json
from patchbay.core.workspaces.models import Membership

routes = web.RouteTableDef()
APP_CLIENT = web.RequestKey("oidc_app_client", object)


async def _caller(request: web.Request) -> AppCaller:
    services = request.app[SERVICES]
    client_id, secret = request.headers.get("x-client-id"), request.headers.get("x-client-secret")
    if client_id and secret:
        return await platform.client_caller(services, client_id, secret)
    authorization = request.headers.get("Authorization", "").strip()
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated(platform.missing_credential(request.headers))
    return await platform.token_caller(services, token.strip())


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
    return {
        "id": row.id,
        "email": row.email,
        "emailVerified": row.email_verified,
        "name": row.name,
        "givenName": row.given_name,
        "familyName": row.family_name,
        "picture": row.picture,
        "phoneNumber": row.phone_number,
        "userType": row.user_type,
        "createdAt": iso(row.created_at),
        "updatedAt": iso(row.updated_at),
    }


def membership_json(row: Membership) -> dict[str, Any]:
    return {"organizationId": row.workspace_id, "userId": row.user_id, "role": row.role, "createdAt": iso(row.created_at)}


# -- organizations --------------------------------------------------------------------------------


@routes.get("/api/v1/organizations")
@query(**PAGE_QUERY)
@returns(OrganizationPage)
@app_client
async def list_organizations(request: web.Request) -> web.Response:
    """List organizations (a workspace-bound client sees its own)."""
    page, limit = page_params(request)
    rows, total = await platform.list_organizations(request.app[SERVICES], request[APP_CLIENT], page=page, limit=limit)
    return reply(request, {"data": [workspace_json(r) for r in rows], "page": page, "limit": limit, "total": total})


@routes.post("/api/v1/organizations")
@accepts(CreateOrganizationDto)
@returns(Organization, status=201, description="Created")
@app_client
async def create_organization(request: web.Request) -> web.Response:
    """Create an organization (platform clients only); ``plan`` defaults to the deployment's
    ``[workspaces] default_plan``, as for workspaces made any other way."""
    dto = structure(await read_object(request), CreateOrganizationDto)
    row = await platform.create_organization(request.app[SERVICES], request[APP_CLIENT], dto)
    return reply(request, workspace_json(row), status=201)


@routes.get("/api/v1/organizations/{id}")
@returns(Organization)
@app_client
async def get_organization(request: web.Request) -> web.Response:
    """One organization."""
    row = await platform.get_organization(request.app[SERVICES], request[APP_CLIENT], request.match_info["id"])
    return reply(request, workspace_json(row))


@routes.patch("/api/v1/organizations/{id}")
@accepts(UpdateOrganizationDto)
@returns(Organization)
@app_client
async def update_organization(request: web.Request) -> web.Response:
    """Rename an organization or change its plan (plans are the operator's: unbound clients only)."""
    body = await read_object(request)
    dto = structure(body, UpdateOrganizationDto)
    row = await platform.update_organization(request.app[SERVICES], request[APP_CLIENT], request.match_info["id"], body, dto)
    return reply(request, workspace_json(row))


@routes.get("/api/v1/organizations/{id}/memberships")
@returns(MembershipList)
@app_client
async def organization_memberships(request: web.Request) -> web.Response:
    """Members of an organization with their roles."""
    rows = await platform.organization_memberships(request.app[SERVICES], request[APP_CLIENT], request.match_info["id"])
    return reply(request, {"data": [membership_json(r) for r in rows]})


@routes.post("/api/v1/organizations/{id}/memberships")
@accepts(AddMemberDto)
@returns(OrganizationMembership, status=201, description="Added")
@app_client
async def add_organization_member(request: web.Request) -> web.Response:
    """Add a user to an organization, or change the role of a member. A workspace-bound client may
    add only the users it created; any other user is not found."""
    dto = structure(await read_object(request), AddMemberDto)
    row = await platform.add_organization_member(request.app[SERVICES], request[APP_CLIENT], request.match_info["id"], dto)
    return reply(request, membership_json(row), status=201)


# -- users ----------------------------------------------------------------------------------------


@routes.get("/api/v1/users")
@query(**PAGE_QUERY, email={"type": "string"})
@returns(PlatformUserPage)
@app_client
async def list_users(request: web.Request) -> web.Response:
    """List users (a workspace-bound client sees its organization's members)."""
    page, limit = page_params(request)
    rows, total = await platform.list_users(request.app[SERVICES], request[APP_CLIENT], email=request.query.get("email"), page=page, limit=limit)
    return reply(request, {"data": [user_json(r) for r in rows], "page": page, "limit": limit, "total": total})


@routes.post("/api/v1/users")
@accepts(CreateUserDto)
@returns(PlatformUser, status=201, description="Created")
@app_client
async def create_platform_user(request: web.Request) -> web.Response:
    """Create a user; a workspace-bound client makes it a member (``role``, default viewer)."""
    body = await read_object(request)
    user = await platform.create_platform_user(request.app[SERVICES], request[APP_CLIENT], body, structure(body, CreateUserDto))
    return reply(request, user_json(user), status=201)


@routes.get("/api/v1/users/{id}")
@returns(PlatformUser)
@app_client(users=True)
async def get_platform_user(request: web.Request) -> web.Response:
    """One user (``me``: the user of the session cookie)."""
    row = await platform.get_platform_user(request.app[SERVICES], request[APP_CLIENT], request.match_info["id"])
    return reply(request, user_json(row))


@routes.patch("/api/v1/users/{id}")
@accepts(UpdateUserDto)
@returns(PlatformUser)
@app_client
async def update_platform_user(request: web.Request) -> web.Response:
    """Change a user's profile, type or password. A workspace-bound client changes only the users
    it created while they belong to no other workspace, and may not vouch for an email address."""
    body = await read_object(request)
    row = await platform.update_platform_user(request.app[SERVICES], request[APP_CLIENT], request.match_info["id"], body, structure(body, UpdateUserDto))
    return reply(request, user_json(row))


@routes.get("/api/v1/users/{id}/memberships")
@returns(MembershipList)
@app_client(users=True)
async def user_memberships(request: web.Request) -> web.Response:
    """The organizations a user belongs to, with roles."""
    rows = await platform.user_memberships(request.app[SERVICES], request[APP_CLIENT], request.match_info["id"])
    return reply(request, {"data": [membership_json(r) for r in rows]})
