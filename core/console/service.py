"""The console's services: its first-party client at the identity provider, the sign-in round trip
(authorization code with PKCE S256, the code traded at the token endpoint), its server-side
sessions, and who may see which workspace with which role.

The client is made (or brought up to date) when the services start: client id
``patchbay-console``, trust ``first_party``, confidential (``client_secret_post``) with a secret
derived from the deployment's secret key, so that every process of a deployment derives the same
one and none has to store it; its redirect URI follows ``base_url``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import aiohttp
import attrs
from sqlalchemy import delete, or_, select, update
from sqlalchemy.exc import IntegrityError

from patchbay.core.console.models import ConsoleSession
from patchbay.core.errors import Unauthenticated
from patchbay.core.identity.models import Grant, OidcClient
from patchbay.core.jobs.cron import CronJob
from patchbay.core.security.permissions import ROLE_PERMISSIONS
from patchbay.core.security.secrets import random_token
from patchbay.core.security.service import Principal
from patchbay.core.security.signing_keys import InvalidToken
from patchbay.core.timeutil import utcnow
from patchbay.core.users.models import User
from patchbay.core.workspaces.models import Membership, Workspace

if TYPE_CHECKING:
    from patchbay.core.services import Services

CLIENT_ID = "patchbay-console"
SCOPE = "openid profile email"
PREFIX = "/console"
CALLBACK_PATH = PREFIX + "/auth/callback"
SIGNED_OUT_PATH = PREFIX + "/auth/signed-out"
SESSION_SECONDS = 12 * 3600
#: the roles, weakest first: a role may do what every role before it may
ROLES = ("viewer", "manager", "admin")


def install(services: Services) -> None:
    services.add_resource(_console_client)
    services.cron.add(CronJob("console-sessions", 3600, purge_sessions))


# -- the console's client -------------------------------------------------------------------------


def redirect_uri(services: Services) -> str:
    return services.settings.public_base_url + CALLBACK_PATH


def signed_out_uri(services: Services) -> str:
    return services.settings.public_base_url + SIGNED_OUT_PATH


def client_secret(services: Services) -> str:
    """The console's client secret: an HMAC of the first secret key, the same in every process."""
    return services.secrets.sign(b"console-client-secret")


async def ensure_client(services: Services) -> None:
    """Make the console's client, or bring its redirect URI, secret and trust up to date."""
    values = {
        "client_name": f"{services.settings.branding.name} console",
        "redirect_uris": [redirect_uri(services)],
        "grant_types": ["authorization_code"],
        "token_endpoint_auth_method": "client_secret_post",
        "scope": SCOPE,
        "require_pkce": True,
        "refresh_token_rotation": False,
        "secret_digest": services.secrets.digest(client_secret(services)),
        "trust": "first_party",
        "self_registered": False,
        "workspace_id": None,
    }
    try:
        await _write_client(services, values)
    except IntegrityError:  # another process made it at the same first start: bring it up to date
        await _write_client(services, values)
    services.identity.clients.forget(CLIENT_ID)


async def _write_client(services: Services, values: dict) -> None:
    async with services.db.transaction() as session:
        row = await session.get(OidcClient, CLIENT_ID)
        if row is None:
            session.add(OidcClient(client_id=CLIENT_ID, application=CLIENT_ID, **values))
        else:
            for key, value in values.items():
                setattr(row, key, value)


@contextlib.asynccontextmanager
async def _console_client(services: Services) -> AsyncIterator[None]:
    await ensure_client(services)
    yield


# -- the sign-in round trip -----------------------------------------------------------------------


@attrs.frozen
class LoginStart:
    """What the browser carries through the identity provider (in an encrypted cookie)."""

    state: str
    nonce: str
    verifier: str
    next: str

    @property
    def challenge(self) -> str:
        digest = hashlib.sha256(self.verifier.encode()).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def new_login(next_path: str) -> LoginStart:
    return LoginStart(state=random_token(16), nonce=random_token(16), verifier=random_token(48), next=next_path)


def authorize_url(services: Services, login: LoginStart) -> str:
    query = {
        "response_type": "code",
        "client_id": CLIENT_ID,
        "redirect_uri": redirect_uri(services),
        "scope": SCOPE,
        "state": login.state,
        "nonce": login.nonce,
        "code_challenge": login.challenge,
        "code_challenge_method": "S256",
    }
    return f"{services.settings.resolved_issuer}/api/v1/oidc/authorize?{urlencode(query)}"


def end_session_url(services: Services, id_token: str | None) -> str:
    query = {"client_id": CLIENT_ID, "post_logout_redirect_uri": signed_out_uri(services)}
    if id_token:
        query["id_token_hint"] = id_token
    return f"{services.settings.resolved_issuer}/api/v1/oidc/end-session?{urlencode(query)}"


async def redeem_code(services: Services, login: LoginStart, code: str, *, token_endpoint: str) -> tuple[str, str, str | None]:
    """Trade ``code`` at ``token_endpoint`` (this server's own, reached on the address the browser's
    request came in on, so that no public URL has to route back here) and check the ID token:
    signature, issuer, audience, expiry and nonce. Answers the user id, the ID token and its grant
    (``sid``)."""
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri(services),
        "client_id": CLIENT_ID,
        "client_secret": client_secret(services),
        "code_verifier": login.verifier,
    }
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15)) as http, http.post(token_endpoint, data=form) as response:
        body = await response.json(content_type=None)
    if response.status != 200 or not isinstance(body, dict) or not isinstance(body.get("id_token"), str):
        reason = body.get("error_description") if isinstance(body, dict) else None
        raise Unauthenticated(f"The identity provider refused the sign-in: {reason or response.status}")
    id_token = body["id_token"]
    try:
        claims = await services.signing_keys.verify(id_token)
    except InvalidToken:
        raise Unauthenticated("The identity provider's ID token is not valid") from None
    audience = claims.get("aud")
    if (
        claims.get("iss") != services.settings.resolved_issuer
        or (audience != CLIENT_ID and CLIENT_ID not in (audience if isinstance(audience, list) else []))
        or not isinstance(claims.get("exp"), int | float)
        or claims["exp"] <= time.time()
        or not hmac.compare_digest(str(claims.get("nonce", "")), login.nonce)
        or not isinstance(claims.get("sub"), str)
    ):
        raise Unauthenticated("The identity provider's ID token is not for this sign-in")
    return claims["sub"], id_token, claims.get("sid") if isinstance(claims.get("sid"), str) else None


# -- sessions -------------------------------------------------------------------------------------


@attrs.frozen
class Person:
    """A signed-in person, as a console page sees them."""

    session_id: str
    user_id: str
    email: str
    name: str | None
    is_operator: bool
    csrf_secret: str
    id_token: str | None

    @property
    def shown_name(self) -> str:
        return self.name or self.email


async def start_session(services: Services, user_id: str, id_token: str, grant_id: str | None) -> str:
    """A new console session of ``user_id``, alive while the grant ``grant_id`` is; the token for
    the cookie (only its digest is stored)."""
    token = random_token(32)
    async with services.db.transaction() as session:
        if await session.get(User, user_id) is None:
            raise Unauthenticated("This account no longer exists")
        session.add(
            ConsoleSession(
                token_digest=services.secrets.digest(token),
                user_id=user_id,
                csrf_secret=random_token(24),
                id_token=id_token,
                grant_id=grant_id,
                expires_at=utcnow() + timedelta(seconds=SESSION_SECONDS),
            )
        )
    return token


async def person_of_token(services: Services, token: str) -> Person | None:
    """The person of a live session: not ended, not expired, its user still there and its grant
    not revoked by the identity provider."""
    async with services.db.session() as session:
        found = (
            await session.execute(
                select(ConsoleSession, User)
                .join(User, User.id == ConsoleSession.user_id)
                .outerjoin(Grant, Grant.id == ConsoleSession.grant_id)
                .where(
                    ConsoleSession.token_digest.in_(services.secrets.digests(token)),
                    ConsoleSession.ended_at.is_(None),
                    ConsoleSession.expires_at > utcnow(),
                    Grant.revoked_at.is_(None),
                )
            )
        ).first()
    if found is None:
        return None
    row, user = found
    return Person(row.id, user.id, user.email, user.name, bool(user.is_operator), row.csrf_secret, row.id_token)


async def end_session(services: Services, session_id: str) -> None:
    async with services.db.transaction() as session:
        await session.execute(update(ConsoleSession).where(ConsoleSession.id == session_id, ConsoleSession.ended_at.is_(None)).values(ended_at=utcnow()))


async def purge_sessions(services: Services) -> dict[str, int]:
    """Delete ended and expired console sessions."""
    async with services.db.transaction() as session:
        result = await session.execute(delete(ConsoleSession).where(or_(ConsoleSession.ended_at.is_not(None), ConsoleSession.expires_at <= utcnow())))
    return {"consoleSessionsPurged": result.rowcount or 0}


def csrf_token(person: Person) -> str:
    """The CSRF token of every form of ``person``'s session."""
    return hmac.new(person.csrf_secret.encode(), b"console-csrf", hashlib.sha256).hexdigest()


def csrf_ok(person: Person, presented: Any) -> bool:
    return isinstance(presented, str) and hmac.compare_digest(presented, csrf_token(person))


# -- workspaces and roles -------------------------------------------------------------------------


@attrs.frozen
class Place:
    """A workspace as the console shows it, with the person's role in it."""

    id: str
    name: str
    slug: str
    plan: str
    role: str


def _place(workspace: Workspace, role: str) -> Place:
    return Place(workspace.id, workspace.name, workspace.slug, workspace.plan, role)


async def places_of(services: Services, person: Person) -> list[Place]:
    """The workspaces ``person`` may open: their memberships; an operator's, every workspace
    (as admin where they are not a member). Members' first, oldest membership first."""
    async with services.db.session() as session:
        rows = await session.execute(
            select(Workspace, Membership.role)
            .join(Membership, Membership.workspace_id == Workspace.id)
            .where(Membership.user_id == person.user_id)
            .order_by(Membership.created_at, Workspace.id)
        )
        places = [_place(workspace, role) for workspace, role in rows.all()]
        if person.is_operator:
            seen = {place.id for place in places}
            others = await session.scalars(select(Workspace).order_by(Workspace.name, Workspace.id))
            places += [_place(workspace, "admin") for workspace in others if workspace.id not in seen]
    return places


async def place_of(services: Services, person: Person, workspace_id: str) -> Place | None:
    """The workspace ``workspace_id`` with the person's role, or None when they may not open it."""
    async with services.db.session() as session:
        found = (
            await session.execute(
                select(Workspace, Membership.role)
                .outerjoin(Membership, (Membership.workspace_id == Workspace.id) & (Membership.user_id == person.user_id))
                .where(Workspace.id == workspace_id)
            )
        ).first()
    if found is None:
        return None
    workspace, role = found
    if role is None:
        return _place(workspace, "admin") if person.is_operator else None
    return _place(workspace, role)


def role_at_least(role: str, minimum: str) -> bool:
    return ROLES.index(role) >= ROLES.index(minimum) if role in ROLES else False


def principal_for(person: Person, place: Place) -> Principal:
    """The principal a console action acts as: the person, with their role's permissions in the
    workspace (what an access token of theirs for that workspace would carry)."""
    return Principal(
        "access_token", place.id, ROLE_PERMISSIONS.get(place.role, frozenset()), subject=person.user_id, client_id=CLIENT_ID, claims={"roles": [place.role]}
    )
