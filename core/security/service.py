"""Who is calling, from the credentials a request presented (contract section 4): a :class:`Principal`.

An API key (``x-api-key``) is a key of one workspace with a set of permissions. An access token of
our own identity provider has its signature checked against our signing keys, then issuer, expiry
and token type, then that it is the client's own (not one for a resource such as ``/mcp``, RFC
8707) and that its client may open the connect API (a user's token: first-party client, grant not
revoked); the tenant is its ``organization_id`` and the permissions its ``permissions``.
``core.security.auth`` reads the credentials of a request and asks here.

What a process has verified is remembered a few seconds in the services' :class:`CredentialCaches`.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

import attrs
from sqlalchemy import select, update

from patchbay.core.errors import Invalid, NotFound
from patchbay.core.identity.models import Grant, OidcClient
from patchbay.core.security.api_keys import IssuedKey, UnknownPermission, create_api_key, find_api_key, list_api_keys, revoke_api_key
from patchbay.core.security.models import ApiKey
from patchbay.core.security.permissions import PERMISSIONS, ROLE_PERMISSIONS
from patchbay.core.security.signing_keys import InvalidToken
from patchbay.core.shared_reads import SharedReads
from patchbay.core.timeutil import utcnow
from patchbay.core.workspaces.audit import Actor, record
from patchbay.core.workspaces.models import Membership

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: Verified API keys are remembered this long per process, so that a burst of calls (the proxy)
#: does not pay a database read each; a key revoked in another process stops working within this
#: time (in this process at once), a key reaching its ``expires_at`` stops working then.
API_KEY_CACHE_SECONDS = 5.0
#: the most (client, grant) trust answers remembered; past it they are all forgotten
TOKEN_TRUST_LIMIT = 10_000
#: the most access tokens whose principal is remembered; past it they are all forgotten
TOKEN_PRINCIPALS_LIMIT = 4096


@attrs.frozen
class Principal:
    kind: Literal["api_key", "access_token"]
    workspace_id: str | None
    permissions: frozenset[str]
    subject: str | None = None  # user id, or client id for client_credentials
    client_id: str | None = None
    claims: dict[str, Any] = attrs.field(factory=dict)

    def can(self, permission: str) -> bool:
        return permission in self.permissions


@attrs.define
class CredentialCaches:
    """This process's verified credentials: API keys (principal, or None for no active key) and,
    per (client id, grant id, (workspace, user)), when it was checked what their tokens may do on the
    connect API and the answer (a revoked grant, a demoted client, a removed or demoted member stop
    working within ``[identity] grant_check_seconds``)."""

    api_keys: SharedReads[str, Principal | None] = attrs.field(factory=SharedReads)
    #: access token -> (the trust answer it was made under, its principal): made again when the
    #: answer is read again; used only after the token verified (``token_principal``)
    token_principals: dict[str, tuple[frozenset[str], Principal]] = attrs.field(factory=dict)
    token_trust: SharedReads[tuple[str, str | None, tuple[str | None, str | None] | None], frozenset[str] | None] = attrs.field(
        factory=lambda: SharedReads(limit=TOKEN_TRUST_LIMIT)
    )


def install(services: Services) -> None:
    """The credential caches, and the signing threads stopped when the services stop."""
    services.credential_caches = CredentialCaches()
    services.add_resource(_signing_threads)


@contextlib.asynccontextmanager
async def _signing_threads(services: Services) -> AsyncIterator[None]:
    try:
        yield
    finally:
        services.signing_keys.close()


async def verify_access_token(services: Services, token: str) -> dict[str, Any]:
    """Claims of a valid access token of this identity provider; raises ``InvalidToken``."""
    claims = await services.signing_keys.verify(token)
    if claims.get("iss") != services.settings.resolved_issuer:
        raise InvalidToken("wrong issuer")
    if not isinstance(claims.get("exp"), int | float) or claims["exp"] <= time.time():
        raise InvalidToken("expired")
    if claims.get("token_type") != "access_token":
        raise InvalidToken("not an access token")
    return claims


async def api_key_principal(services: Services, key: str) -> Principal | None:
    """The principal of an active API key (remembered ``API_KEY_CACHE_SECONDS``); None for no such key."""
    return await services.credential_caches.api_keys.get(key, functools.partial(_lookup_api_key, services, key))


def forget_cached_api_keys(services: Services) -> None:
    """Drop this process's verified keys and the reads under way, so that a revocation made here
    takes effect at once."""
    services.credential_caches.api_keys.clear()


async def _lookup_api_key(services: Services, key: str) -> tuple[Principal | None, float]:
    """The key's principal (None for no active key) and how long this answer may be remembered."""
    async with services.db.session() as session:
        record = await find_api_key(session, services.secrets, key)
        if record is None:
            return None, API_KEY_CACHE_SECONDS
        if record.last_used_at is None or (utcnow() - record.last_used_at).total_seconds() > 60:
            await session.execute(update(ApiKey).where(ApiKey.id == record.id).values(last_used_at=utcnow()))
            await session.commit()
    lifetime = API_KEY_CACHE_SECONDS
    if record.expires_at is not None:
        lifetime = min(lifetime, (record.expires_at - utcnow()).total_seconds())
    return Principal("api_key", record.workspace_id, frozenset(record.permissions), subject=record.id), lifetime


#: a client_credentials token's reach: the permissions it names, bound by the operator's choice
ALL_PERMISSIONS = frozenset(PERMISSIONS)


async def _connect_api_reach(services: Services, claims: dict[str, Any]) -> frozenset[str] | None:
    """What an access token may still do on the connect API: None when it opens nothing (its client
    is gone; a user's token through a third-party client, or from a revoked grant; a user no longer
    a member of the token's workspace), else the permissions that bound its own: a user's current
    role's (a demoted member's token does no more than the new role allows), every one for a
    client_credentials token (its workspace was bound by the operator). Remembered for
    ``[identity] grant_check_seconds``."""
    client_id = claims.get("client_id")
    if not isinstance(client_id, str):
        return None
    service = claims.get("sub") == client_id
    grant_id = None if service else claims.get("grant_id")  # every user token of the token endpoint names its grant
    member = None if service else (claims.get("organization_id"), claims.get("sub"))
    read = functools.partial(_read_connect_api_reach, services, client_id, grant_id, member)
    return await services.credential_caches.token_trust.get((client_id, grant_id, member), read)


async def _read_connect_api_reach(services: Services, client_id: str, grant_id: Any, member: tuple[Any, Any] | None) -> tuple[frozenset[str] | None, float]:
    """:func:`_connect_api_reach` read from the database, and how long it may be remembered (the
    calls that miss it at once share this read)."""
    reach: frozenset[str] | None = None
    async with services.db.session() as session:
        trust = await session.scalar(select(OidcClient.trust).where(OidcClient.client_id == client_id))
        if member is None and trust is not None:  # the client's own token (client_credentials): no member to bound it
            reach = ALL_PERMISSIONS
        elif trust in ("first_party", "platform") and await _grant_stands(session, client_id, grant_id):
            reach = await _member_reach(session, *member)
    return reach, services.settings.identity.grant_check_seconds


async def _grant_stands(session, client_id: str, grant_id: Any) -> bool:
    """Whether a user's token's grant (when it names one) exists and is not revoked."""
    if not isinstance(grant_id, str):
        return True
    row = (await session.execute(select(Grant.revoked_at).where(Grant.id == grant_id, Grant.client_id == client_id))).first()
    return row is not None and row.revoked_at is None


async def _member_reach(session, workspace_id: Any, user_id: Any) -> frozenset[str] | None:
    """The permissions of the user's role in the token's workspace now; None when no longer a
    member. A token naming no workspace opens none, so nothing bounds it here."""
    if workspace_id is None:
        return ALL_PERMISSIONS
    role = await session.scalar(select(Membership.role).where(Membership.workspace_id == workspace_id, Membership.user_id == user_id))
    return ROLE_PERMISSIONS.get(role) if role is not None else None


async def token_principal(services: Services, token: str) -> Principal | None:
    """The principal of an access token, wherever the request carried it (the ``Authorization``
    header, or ``token=`` on a login link): None unless the token is valid and opens the connect
    API (:func:`_connect_api_reach`); its permissions are those it names that its user's role
    still grants."""
    try:
        claims = await verify_access_token(services, token)
    except InvalidToken:
        return None
    if claims.get("aud", claims.get("client_id")) != claims.get("client_id"):  # for a resource (RFC 8707): an agent's, for /mcp
        return None
    reach = await _connect_api_reach(services, claims)
    if reach is None:
        return None
    made = services.credential_caches.token_principals.get(token)
    if made is not None and made[0] is reach:  # the same token, bounded by the same trust answer
        return made[1]
    permissions = claims.get("permissions") or []
    principal = Principal(
        "access_token",
        claims.get("organization_id"),
        frozenset(p for p in permissions if isinstance(p, str)) & reach,
        subject=claims.get("sub"),
        client_id=claims.get("client_id") or claims.get("aud"),
        claims=claims,
    )
    remembered = services.credential_caches.token_principals
    if len(remembered) >= TOKEN_PRINCIPALS_LIMIT:
        remembered.clear()
    remembered[token] = (reach, principal)
    return principal


async def workspace_api_keys(services: Services, workspace_id: str) -> list[ApiKey]:
    """Every key of a workspace, revoked and expired ones included, newest first."""
    async with services.db.session(tenant=workspace_id) as session:
        return await list_api_keys(session, workspace_id)


async def revoke_workspace_api_key(services: Services, workspace_id: str, key_id: str, *, actor: Actor) -> None:
    """Revoke an active key of the workspace on behalf of ``actor`` (the audit trail's
    ``api_key.revoked``; NotFound otherwise); this process refuses it at once."""
    async with services.db.transaction(tenant=workspace_id) as session:
        revoked = await revoke_api_key(session, key_id, workspace_id=workspace_id)
        if revoked:
            name, prefix = (await session.execute(select(ApiKey.name, ApiKey.prefix).where(ApiKey.id == key_id))).one()
            await record(session, workspace_id=workspace_id, actor=actor, action="api_key.revoked", target_id=key_id, details={"name": name, "prefix": prefix})
    if not revoked:
        raise NotFound("no active API key with this id in this workspace")
    forget_cached_api_keys(services)


async def issue_workspace_api_key(
    services: Services, workspace_id: str, *, name: str, permissions: list[str] | None, expires_in: timedelta | None, actor: Actor
) -> IssuedKey:
    """A new key of the workspace (every permission when ``permissions`` is empty), made on behalf
    of ``actor`` (the audit trail's ``api_key.created``, which names its display prefix only); the
    key is in the answer and nowhere else. ``Invalid`` for an empty name, an unknown permission or
    an expiry not in the future."""
    if not name.strip() or len(name) > 200:
        raise Invalid("Validation failed: name must have 1 to 200 characters")
    async with services.db.transaction(tenant=workspace_id) as session:
        try:
            issued = await create_api_key(
                session, services.secrets, workspace_id=workspace_id, name=name.strip(), permissions=permissions, expires_in=expires_in
            )
        except (UnknownPermission, ValueError) as error:
            raise Invalid(f"Validation failed: {error}") from None
        key = issued.record
        details = {
            "name": key.name,
            "prefix": key.prefix,
            "permissions": list(key.permissions),
            "expiresAt": key.expires_at.isoformat() if key.expires_at else None,
        }
        await record(session, workspace_id=workspace_id, actor=actor, action="api_key.created", target_id=key.id, details=details)
        return issued
