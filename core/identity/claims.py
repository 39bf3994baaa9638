"""Scopes and the claims they grant (spec 2.16), and the user facts the claims are built from."""

from __future__ import annotations

from typing import Any

import attrs
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.security.permissions import permissions_for_roles
from patchbay.core.users.models import User
from patchbay.core.workspaces.models import Membership

SCOPES_SUPPORTED = ("openid", "profile", "email", "phone", "organization", "permissions", "offline_access", "mcp")
CLAIMS_SUPPORTED = (
    "sub",
    "iss",
    "aud",
    "exp",
    "iat",
    "nonce",
    "name",
    "given_name",
    "family_name",
    "email",
    "email_verified",
    "picture",
    "phone_number",
    "updated_at",
    "organization_id",
    "organization_memberships",
    "user_type",
    "permissions",
    "roles",
)
SCOPE_DESCRIPTIONS = {
    "openid": "Sign you in",
    "profile": "Your name and picture",
    "email": "Your email address",
    "phone": "Your phone number",
    "organization": "Your organizations and your role in them",
    "permissions": "Your permissions and roles",
    "offline_access": "Stay signed in (refresh tokens)",
    "mcp": "Use the tools of the connections you choose below, as an agent",
}


def scope_list(scope: str | None) -> list[str]:
    return [item for item in (scope or "").split() if item]


@attrs.frozen
class UserFacts:
    """What the claims of one user are made of, loaded once before a grant runs."""

    id: str
    email: str
    email_verified: bool
    name: str | None
    given_name: str | None
    family_name: str | None
    picture: str | None
    phone_number: str | None
    user_type: str | None
    updated_at: int
    memberships: tuple[tuple[str, str], ...]  # (workspace_id, role), oldest first

    @property
    def organization_id(self) -> str | None:
        return self.memberships[0][0] if self.memberships else None

    @property
    def roles(self) -> list[str]:
        """The roles of the primary organization: the tenant that ``organization_id`` opens."""
        return [self.memberships[0][1]] if self.memberships else []


async def load_user_facts(session: AsyncSession, user_id: str) -> UserFacts | None:
    user = await session.get(User, user_id)
    if user is None:
        return None
    rows = (
        await session.execute(
            select(Membership.workspace_id, Membership.role).where(Membership.user_id == user_id).order_by(Membership.created_at, Membership.id)
        )
    ).all()
    return UserFacts(
        id=user.id,
        email=user.email,
        email_verified=bool(user.email_verified),
        name=user.name,
        given_name=user.given_name,
        family_name=user.family_name,
        picture=user.picture,
        phone_number=user.phone_number,
        user_type=user.user_type,
        updated_at=int(user.updated_at.timestamp()),
        memberships=tuple((row[0], row[1]) for row in rows),
    )


def user_claims(user: UserFacts, scope: str | None) -> dict[str, Any]:
    """The user claims that ``scope`` grants (spec 2.16); ``sub`` always."""
    scopes = set(scope_list(scope))
    claims: dict[str, Any] = {"sub": user.id}
    if "profile" in scopes:
        claims.update(name=user.name, given_name=user.given_name, family_name=user.family_name, picture=user.picture, updated_at=user.updated_at)
    if "email" in scopes:
        claims.update(email=user.email, email_verified=user.email_verified)
    if "phone" in scopes:
        claims["phone_number"] = user.phone_number
    if "organization" in scopes:
        claims.update(
            organization_id=user.organization_id,
            organization_memberships=[{"organization_id": ws, "role": role} for ws, role in user.memberships],
            user_type=user.user_type,
        )
    if "permissions" in scopes:
        claims.update(permissions=sorted(permissions_for_roles(user.roles)), roles=user.roles)
    return {key: value for key, value in claims.items() if value is not None}
