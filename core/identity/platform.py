"""The platform services for app clients (5B point 4, routes in ``core.identity.routes_platform``):
organizations, users and memberships as an app client sees them. Callers are app backends: a
client_credentials access token, or the id and secret, of a client the operator marked ``platform``
(any other client is Forbidden); a token issued to a user is Unauthenticated here. A client bound
to a workspace (``AppCaller.workspace_id``) sees and changes only that organization and its
members; an unbound platform client sees all of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.errors import Forbidden, Invalid, NotFound, Unauthenticated
from patchbay.core.identity.clients import Client
from patchbay.core.identity.platform_models import AddMemberDto, CreateOrganizationDto, CreateUserDto, UpdateOrganizationDto, UpdateUserDto
from patchbay.core.identity.service import load_client
from patchbay.core.security.refusals import PLATFORM_CREDENTIALS, platform_token_problem, unauthorized
from patchbay.core.security.service import verify_access_token
from patchbay.core.security.signing_keys import InvalidToken
from patchbay.core.users.models import User
from patchbay.core.users.service import UserError, change_password, create_user
from patchbay.core.workspaces.models import PLANS, ROLES, Membership, Workspace
from patchbay.core.workspaces.service import WorkspaceError, add_member, create_workspace

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: the profile fields of the platform API and their columns
PROFILE_FIELDS = {
    "name": "name",
    "givenName": "given_name",
    "familyName": "family_name",
    "picture": "picture",
    "phoneNumber": "phone_number",
    "userType": "user_type",
}


@attrs.frozen
class AppCaller:
    client_id: str | None
    workspace_id: str | None
    user_id: str | None = None  # a signed-in user (session cookie): reads of their own records only


# -- who calls ------------------------------------------------------------------------------------


def missing_credential(headers: Mapping[str, str]) -> str:
    """The 401 message for a request that sent neither a client's id and secret nor a bearer token."""
    if headers.get("x-client-id") or headers.get("x-client-secret"):
        why = "`x-client-id` and `x-client-secret` go together, and one of them is missing"
    elif headers.get("x-api-key"):
        why = "a workspace API key opens the connect API, not the platform API"
    elif headers.get("Authorization", "").strip():
        scheme = headers["Authorization"].strip().partition(" ")[0]
        why = (
            f"the `Authorization` scheme `{scheme}` is not accepted here (only `Bearer`)"
            if " " in headers["Authorization"].strip()
            else "the token has no `Bearer ` scheme"
        )
    else:
        why = "no credential was sent"
    return unauthorized(why, PLATFORM_CREDENTIALS)


async def client_caller(services: Services, client_id: str, secret: str) -> AppCaller:
    """The caller presenting a client's id and secret (``x-client-id``, ``x-client-secret``). An
    unknown client and a wrong secret read the same; a public client has no secret to send."""
    client = await load_client(services, client_id)
    if client is None or client.is_public or not client.check_client_secret(secret):
        raise Unauthenticated(unauthorized("`x-client-id` and `x-client-secret` do not match a confidential client of this deployment", PLATFORM_CREDENTIALS))
    return _trusted(client)


async def token_caller(services: Services, token: str) -> AppCaller:
    """The caller presenting a client_credentials access token."""
    try:
        claims = await verify_access_token(services, token)
    except InvalidToken:
        raise Unauthenticated(unauthorized(await platform_token_problem(services, token), PLATFORM_CREDENTIALS)) from None
    if not claims.get("client_id") or claims.get("sub") != claims.get("client_id"):  # a user-context token: this API is for app backends
        raise Unauthenticated(unauthorized(await platform_token_problem(services, token), PLATFORM_CREDENTIALS))
    client = await load_client(services, claims["client_id"])
    if client is None:
        raise Unauthenticated(unauthorized(f"the client the token was issued to (`{claims['client_id']}`) no longer exists", PLATFORM_CREDENTIALS))
    return _trusted(client)


def _trusted(client: Client) -> AppCaller:
    """Platform trust is granted by the operator (``patchbay clients create --platform``), never
    self-served: an authenticated client without it is refused."""
    if not client.is_platform:
        raise Forbidden(
            f"This client ({client.client_id}) is not trusted with the platform API: an operator creates platform clients with "
            "`patchbay clients create --platform`; a self-registered app never is one"
        )
    return AppCaller(client.client_id, client.workspace_id)


def _visible_org(caller: AppCaller, organization_id: str) -> None:
    if caller.workspace_id is not None and caller.workspace_id != organization_id:
        raise NotFound("Organization not found")


def _own_id(caller: AppCaller, user_id: str) -> str:
    """``me`` names the signed-in user; a user may read only their own records."""
    if caller.user_id is None:
        return user_id
    if user_id not in ("me", caller.user_id):
        raise NotFound("User not found")
    return caller.user_id


async def _get_org(session: AsyncSession, caller: AppCaller, organization_id: str) -> Workspace:
    _visible_org(caller, organization_id)
    row = await session.get(Workspace, organization_id)
    if row is None:
        raise NotFound("Organization not found")
    return row


async def _get_user(session: AsyncSession, caller: AppCaller, user_id: str) -> User:
    row = await visible_user(session, _own_id(caller, user_id), workspace_id=caller.workspace_id)
    if row is None:
        raise NotFound("User not found")
    return row


async def _check_bound_client_may_change(session: AsyncSession, caller: AppCaller, user: User, body: dict[str, Any]) -> None:
    """A client bound to one organization changes only its own users: those it created, while they
    belong to no other organization; and it never vouches for an email address."""
    if "emailVerified" in body:
        raise Forbidden("A client bound to an organization cannot change whether an email address is verified")
    if user.created_by_client_id != caller.client_id or await member_elsewhere(session, user.id, caller.workspace_id):
        raise Forbidden("A client bound to an organization can change only the users it created, while they belong to no other organization")


# -- organizations --------------------------------------------------------------------------------


async def list_organizations(services: Services, caller: AppCaller, *, page: int, limit: int) -> tuple[list[Workspace], int]:
    async with services.db.session() as session:
        return await organization_page(session, workspace_id=caller.workspace_id, page=page, limit=limit)


async def create_organization(services: Services, caller: AppCaller, dto: CreateOrganizationDto) -> Workspace:
    """``plan`` defaults to the deployment's ``[workspaces] default_plan``, as for workspaces made
    any other way; a client bound to an organization cannot create one."""
    if caller.workspace_id is not None:
        raise Forbidden("A client bound to an organization cannot create organizations")
    if not dto.name.strip():
        raise Invalid("Validation failed: name is required")
    async with services.db.transaction() as session:
        try:
            row, _ = await create_workspace(session, name=dto.name, plan=dto.plan or services.settings.workspaces.default_plan, external_id=dto.externalId)
        except WorkspaceError as error:
            raise Invalid(f"Validation failed: {error}") from None
    return row


async def get_organization(services: Services, caller: AppCaller, organization_id: str) -> Workspace:
    async with services.db.session() as session:
        return await _get_org(session, caller, organization_id)


async def update_organization(services: Services, caller: AppCaller, organization_id: str, body: dict[str, Any], dto: UpdateOrganizationDto) -> Workspace:
    """Rename an organization or change its plan (plans are the operator's: unbound clients only)."""
    if caller.workspace_id is not None and "plan" in body:
        raise Forbidden("A client bound to an organization cannot change its plan")
    async with services.db.transaction() as session:
        row = await _get_org(session, caller, organization_id)
        if dto.name is not None:
            if not dto.name.strip():
                raise Invalid("Validation failed: name must not be empty")
            row.name = dto.name.strip()
        if dto.plan is not None:
            if dto.plan not in PLANS:
                raise Invalid(f"Validation failed: plan must be one of {', '.join(PLANS)}")
            row.plan = dto.plan
    return row


async def organization_memberships(services: Services, caller: AppCaller, organization_id: str) -> list[Membership]:
    async with services.db.session() as session:
        org = await _get_org(session, caller, organization_id)
        return await memberships(session, workspace_id=org.id)


async def add_organization_member(services: Services, caller: AppCaller, organization_id: str, dto: AddMemberDto) -> Membership:
    """Add a user to an organization, or change the role of a member. A workspace-bound client may
    add only the users it created; any other user is not found."""
    if not dto.userId:
        raise Invalid("Validation failed: userId is required")
    async with services.db.transaction() as session:
        org = await _get_org(session, caller, organization_id)
        if await addable_user(session, dto.userId, workspace_id=caller.workspace_id, client_id=caller.client_id) is None:
            raise NotFound("User not found")
        try:
            return await add_member(session, workspace_id=org.id, user_id=dto.userId, role=dto.role)
        except WorkspaceError as error:
            raise Invalid(f"Validation failed: {error}") from None


# -- users ----------------------------------------------------------------------------------------


async def list_users(services: Services, caller: AppCaller, *, email: str | None, page: int, limit: int) -> tuple[list[User], int]:
    async with services.db.session() as session:
        return await user_page(session, workspace_id=caller.workspace_id, email=email, page=page, limit=limit)


async def create_platform_user(services: Services, caller: AppCaller, body: dict[str, Any], dto: CreateUserDto) -> User:
    """Create a user; a workspace-bound client makes it a member (``role``, default viewer)."""
    if not dto.email:
        raise Invalid("Validation failed: email is required")
    profile = {column: getattr(dto, key) for key, column in PROFILE_FIELDS.items() if key in body}
    if dto.role not in ROLES:
        raise Invalid(f"Validation failed: role must be one of {', '.join(ROLES)}")
    async with services.db.transaction() as session:
        try:
            user = await create_user(session, email=dto.email, password=dto.password, created_by_client_id=caller.client_id, **profile)
        except UserError as error:
            raise Invalid(f"Validation failed: {error}") from None
        if dto.emailVerified is True:
            if caller.workspace_id is not None:
                raise Forbidden("A client bound to an organization cannot mark an email address as verified")
            user.email_verified = True
        if caller.workspace_id is not None:
            await add_member(session, workspace_id=caller.workspace_id, user_id=user.id, role=dto.role)
    return user


async def get_platform_user(services: Services, caller: AppCaller, user_id: str) -> User:
    async with services.db.session() as session:
        return await _get_user(session, caller, user_id)


async def update_platform_user(services: Services, caller: AppCaller, user_id: str, body: dict[str, Any], dto: UpdateUserDto) -> User:
    """Change a user's profile, type or password. A workspace-bound client changes only the users
    it created while they belong to no other workspace, and may not vouch for an email address."""
    async with services.db.transaction() as session:
        row = await _get_user(session, caller, user_id)
        if caller.workspace_id is not None:
            await _check_bound_client_may_change(session, caller, row, body)
        for key, column in PROFILE_FIELDS.items():
            if key in body:
                setattr(row, column, getattr(dto, key))
        if "emailVerified" in body:
            if dto.emailVerified is None:
                raise Invalid("Validation failed: emailVerified must be true or false")
            row.email_verified = dto.emailVerified
        if dto.password is not None:
            if len(dto.password) < 8:
                raise Invalid("Validation failed: password must have at least 8 characters")
            await change_password(session, row, dto.password)
    return row


async def user_memberships(services: Services, caller: AppCaller, user_id: str) -> list[Membership]:
    """The organizations a user belongs to, with roles."""
    async with services.db.session() as session:
        user = await _get_user(session, caller, user_id)
        return await memberships(session, user_id=user.id, workspace_id=caller.workspace_id)


# -- queries --------------------------------------------------------------------------------------


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
