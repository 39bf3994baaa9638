"""Who is calling: the connect API's credentials (contract section 4) turned into a :class:`Principal`.

A request carries either ``x-api-key`` (a key of one workspace with a set of permissions) or an
access token of our own identity provider in ``Authorization`` (with or without ``Bearer ``): its
signature is checked against our signing keys, then issuer, expiry and token type, then that its
client may open the connect API (a user's token: first-party client, grant not revoked); the tenant
is its ``organization_id`` and the permissions its ``permissions``. Handlers declare what they need with
:func:`requires`; nothing else reads credentials.
"""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import attrs
from aiohttp import web
from sqlalchemy import select, update

from patchbay.core.appkeys import DB, PRINCIPAL, SECRETS, SETTINGS, SIGNING_KEYS
from patchbay.core.http.errors import ApiError, forbidden, unauthorized
from patchbay.core.identity.models import Grant, OidcClient
from patchbay.core.security.api_keys import find_api_key
from patchbay.core.security.models import ApiKey
from patchbay.core.security.signing_keys import InvalidToken
from patchbay.core.shared_reads import SharedReads
from patchbay.core.timeutil import utcnow


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


def _bearer(value: str) -> str:
    """The token of an ``Authorization`` value: ``Bearer <token>`` or a bare token; "" for another
    scheme (``Basic`` client credentials at the token endpoint are not a token to verify)."""
    scheme, space, rest = value.strip().partition(" ")
    if not space:
        return scheme
    return rest.strip() if scheme.lower() == "bearer" else ""


async def verify_access_token(app: web.Application, token: str) -> dict[str, Any]:
    """Claims of a valid access token of this identity provider; raises ``InvalidToken``."""
    claims = await app[SIGNING_KEYS].verify(token)
    if claims.get("iss") != app[SETTINGS].resolved_issuer:
        raise InvalidToken("wrong issuer")
    if not isinstance(claims.get("exp"), int | float) or claims["exp"] <= time.time():
        raise InvalidToken("expired")
    if claims.get("token_type") != "access_token":
        raise InvalidToken("not an access token")
    return claims


#: Verified API keys are remembered this long per process, so that a burst of calls (the proxy)
#: does not pay a database read each; a key revoked in another process stops working within this
#: time (in this process at once), a key reaching its ``expires_at`` stops working then.
API_KEY_CACHE_SECONDS = 5.0
#: per database: this process's verified API keys (principal, or None for no active key)
_api_keys: weakref.WeakKeyDictionary[Any, SharedReads[str, Principal | None]] = weakref.WeakKeyDictionary()


async def _from_api_key(app: web.Application, key: str) -> Principal | None:
    keys = _api_keys.get(app[DB])
    if keys is None:
        keys = _api_keys[app[DB]] = SharedReads()
    return await keys.get(key, functools.partial(_lookup_api_key, app, key))


def forget_cached_api_keys(app: web.Application) -> None:
    """Drop this process's verified keys and the reads under way, so that a revocation made here
    takes effect at once."""
    keys = _api_keys.get(app[DB])
    if keys is not None:
        keys.clear()


async def _lookup_api_key(app: web.Application, key: str) -> tuple[Principal | None, float]:
    """The key's principal (None for no active key) and how long this answer may be remembered."""
    async with app[DB].session() as session:
        record = await find_api_key(session, app[SECRETS], key)
        if record is None:
            return None, API_KEY_CACHE_SECONDS
        if record.last_used_at is None or (utcnow() - record.last_used_at).total_seconds() > 60:
            await session.execute(update(ApiKey).where(ApiKey.id == record.id).values(last_used_at=utcnow()))
            await session.commit()
    lifetime = API_KEY_CACHE_SECONDS
    if record.expires_at is not None:
        lifetime = min(lifetime, (record.expires_at - utcnow()).total_seconds())
    return Principal("api_key", record.workspace_id, frozenset(record.permissions), subject=record.id), lifetime


#: Per process: (client id, grant id) -> (checked at, opens the connect API). A revoked grant or a
#: demoted client stops working within ``[identity] grant_check_seconds``.
_token_trust_cache: weakref.WeakKeyDictionary[Any, dict[tuple[str, str | None], tuple[float, bool]]] = weakref.WeakKeyDictionary()


async def _opens_connect_api(app: web.Application, claims: dict[str, Any]) -> bool:
    """An access token opens the connect API only if its client still exists and, for a user's
    token, the client is first-party (or platform) and the grant it came from is not revoked.
    Third-party apps a user signed in to get identity, not the keys to the user's workspaces."""
    client_id = claims.get("client_id")
    if not isinstance(client_id, str):
        return False
    service = claims.get("sub") == client_id  # client_credentials: its workspace was bound by the operator
    grant_id = None if service else claims.get("grant_id")  # every user token of the token endpoint names its grant
    cache = _token_trust_cache.setdefault(app[DB], {})
    hit = cache.get((client_id, grant_id))
    ttl = app[SETTINGS].identity.grant_check_seconds
    if hit is not None and time.monotonic() - hit[0] < ttl:
        return hit[1]
    async with app[DB].session() as session:
        trust = await session.scalar(select(OidcClient.trust).where(OidcClient.client_id == client_id))
        allowed = trust is not None
        if allowed and not service:
            allowed = trust in ("first_party", "platform")
        if allowed and isinstance(grant_id, str):
            revoked = await session.execute(select(Grant.revoked_at).where(Grant.id == grant_id, Grant.client_id == client_id))
            row = revoked.first()
            allowed = row is not None and row.revoked_at is None
    if len(cache) > 10_000:
        cache.clear()
    cache[(client_id, grant_id)] = (time.monotonic(), allowed)
    return allowed


async def token_principal(app: web.Application, token: str) -> Principal | None:
    """The principal of an access token, wherever the request carried it (the ``Authorization``
    header, or ``token=`` on a login link): None unless the token is valid and opens the connect
    API (its client still exists and may, its grant is not revoked)."""
    try:
        claims = await verify_access_token(app, token)
    except InvalidToken:
        return None
    if not await _opens_connect_api(app, claims):
        return None
    permissions = claims.get("permissions") or []
    return Principal(
        "access_token",
        claims.get("organization_id"),
        frozenset(p for p in permissions if isinstance(p, str)),
        subject=claims.get("sub"),
        client_id=claims.get("client_id") or claims.get("aud"),
        claims=claims,
    )


async def authenticate(request: web.Request) -> Principal | None:
    """The caller's principal, or None when the request carries no valid credential (cached)."""
    if PRINCIPAL in request:
        return request[PRINCIPAL]  # type: ignore[return-value]
    principal = None
    api_key = request.headers.get("x-api-key")
    authorization = request.headers.get("Authorization")
    if api_key:
        principal = await _from_api_key(request.app, api_key.strip())
    elif token := _bearer(authorization or ""):
        principal = await token_principal(request.app, token)
    request[PRINCIPAL] = principal
    return principal


async def require_principal(request: web.Request, *permissions: str) -> Principal:
    """The authenticated workspace principal holding every one of ``permissions``; 401 or 403."""
    principal = await authenticate(request)
    if principal is None:
        raise unauthorized()
    if principal.workspace_id is None:
        if principal.kind == "access_token":
            raise ApiError(401, "Unauthorized: the access token names no workspace (organization_id); request the `organization` scope")
        raise unauthorized()
    missing = [p for p in permissions if not principal.can(p)]
    if missing:
        scope_hint = ""
        if principal.kind == "access_token" and "permissions" not in (principal.claims or {}):
            scope_hint = " (the access token carries no permissions: request the `permissions` scope)"
        raise forbidden(f"Missing permission: {', '.join(missing)}{scope_hint}")
    return principal


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def requires(*permissions: str) -> Callable[[Handler], Handler]:
    """Decorate a handler: the caller must be authenticated and hold ``permissions``.

    The principal is then ``request[PRINCIPAL]``; the permissions are published in /openapi.json.
    """

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def wrapper(request: web.Request) -> web.StreamResponse:
            await require_principal(request, *permissions)
            return await handler(request)

        wrapper.patchbay_permissions = permissions  # type: ignore[attr-defined]
        wrapper.patchbay_authenticated = True  # type: ignore[attr-defined]
        return wrapper

    return decorate


def principal_of(request: web.Request) -> Principal:
    """The principal of a handler decorated with :func:`requires`."""
    principal = request.get(PRINCIPAL)
    if principal is None:
        raise unauthorized()
    return principal  # type: ignore[return-value]
