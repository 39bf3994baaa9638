"""Why a request's credential was refused, in words its sender can act on: the message of a 401.

Every message starts with ``Unauthorized: `` (clients that matched the old bare ``Unauthorized``
by prefix keep working), says what was wrong with what was sent, and ends with the credential the
route expects. The checks run only once a request has been refused, never on the way in.

What a message may tell, and what it must not:

- **API keys read the same whether unknown, revoked or expired.** An API key is an opaque random
  string; only our database knows whether it ever existed. Telling "revoked" or "expired" apart
  from "unknown" would confirm to whoever holds a string (a key found in a log, a screenshot, a
  public repository) that it is, or was, a real key of this deployment and of a live workspace.
  The key's owner loses nothing: the workspace's key list (``GET /connect/v1/api-keys``,
  ``patchbay api-keys list``) shows each key's state and expiry to those allowed to see it. What
  can be told from the string alone is told: a key that does not have the form of our keys, a key
  sent under a ``Bearer`` scheme, a token sent where a key goes and the other way round.
- **Access tokens are told in full.** A token carries its own claims (a JWT's payload is readable
  by anyone who holds it) and its signature proves this deployment issued it, so saying that it
  expired, is for another audience (the MCP server's), was issued to a third-party app, or that its
  grant was revoked reveals nothing its holder could not already read or prove. A token whose
  signature does not verify is told only that.
- **Client id and secret** read the same whether the client is unknown or the secret is wrong.
"""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from patchbay.core.identity.models import Grant, OidcClient
from patchbay.core.security.api_keys import KEY_PREFIX
from patchbay.core.security.signing_keys import InvalidToken
from patchbay.core.timeutil import iso

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: what the connect API takes, said the way its 401s say it
CONNECT_API_CREDENTIALS = (
    "a workspace API key as `x-api-key: <key>`, or an access token of this deployment's identity provider as `Authorization: Bearer <token>`"
)
#: what the platform API (organizations, users) takes
PLATFORM_CREDENTIALS = (
    "a platform client's `x-client-id` and `x-client-secret` headers, or its client_credentials access token as `Authorization: Bearer <token>`"
)

_API_KEY = re.compile(re.escape(KEY_PREFIX) + r"[A-Za-z0-9_-]{43}")
_JWT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


def unauthorized(why: str, expected: str = CONNECT_API_CREDENTIALS) -> str:
    """``Unauthorized: <why>; send <expected>``."""
    return f"Unauthorized: {why}; send {expected}"


def split_authorization(value: str) -> tuple[str, str]:
    """``(scheme, token)`` of an ``Authorization`` value; a bare token has the scheme "" (the connect
    API takes a token with or without ``Bearer ``)."""
    scheme, space, rest = value.strip().partition(" ")
    if not space:
        return "", scheme
    return scheme, rest.strip()


def looks_like_jwt(value: str) -> bool:
    return _JWT.fullmatch(value) is not None


def _is_admin_key(services: Services, value: str) -> bool:
    configured = services.settings.admin.api_key
    return bool(configured) and hmac.compare_digest(value.encode("utf-8", "surrogateescape"), configured.encode())


# -- the connect API ------------------------------------------------------------------------------


async def connect_api_refusal(services: Services, headers: Mapping[str, str], *, expected: str = CONNECT_API_CREDENTIALS) -> str:
    """The 401 message for a request the connect API refused: ``x-api-key`` is read first, as
    ``core.security.auth.authenticate`` reads it."""
    api_key = headers.get("x-api-key", "").strip()
    authorization = headers.get("Authorization", "").strip()
    if api_key:
        return unauthorized(api_key_problem(services, api_key), expected)
    if not authorization:
        return unauthorized("no credential was sent", expected)
    scheme, token = split_authorization(authorization)
    if scheme and scheme.lower() != "bearer":
        return unauthorized(f"the `Authorization` scheme `{scheme}` is not accepted here (only `Bearer`)", expected)
    if not token or (not scheme and token.lower() == "bearer"):
        return unauthorized("`Authorization: Bearer` carries no token", expected)
    if token.startswith(KEY_PREFIX):
        return unauthorized("an API key was sent in `Authorization`; an API key goes in its own header", "it as `x-api-key: <key>`")
    if _is_admin_key(services, token):
        return unauthorized("the operator's admin key opens only the operator's routes (`/accounts`), not a workspace's", expected)
    return unauthorized(await connect_token_problem(services, token), expected)


def api_key_problem(services: Services, api_key: str) -> str:
    """Why ``x-api-key`` was refused, from the string alone (see the module's docstring)."""
    if api_key.lower().startswith("bearer "):
        return "`x-api-key` carries the key alone, without a `Bearer ` scheme"
    if looks_like_jwt(api_key):
        return "`x-api-key` carries a JWT; an access token goes in `Authorization: Bearer <token>`, and `x-api-key` takes a workspace API key"
    if _is_admin_key(services, api_key):
        return "the operator's admin key opens only the operator's routes (`/accounts`), not a workspace's"
    if _API_KEY.fullmatch(api_key) is None:
        return f"the value of `x-api-key` is not an API key of this deployment (those are `{KEY_PREFIX}` and 43 letters, digits, `-` or `_`)"
    return (
        "the API key is not active: it is unknown, revoked or expired (a workspace admin sees each key's state "
        "with `GET /connect/v1/api-keys` or `patchbay api-keys list`)"
    )


async def token_claims(services: Services, token: str) -> tuple[dict[str, Any] | None, str]:
    """``(claims, "")`` of a well-formed, signed, current access token of this identity provider,
    else ``(None, why)``: malformed, not ours, another issuer, expired, not an access token."""
    if not looks_like_jwt(token):
        return None, "the bearer token is not a JWT (three base64url parts separated by dots)"
    try:
        claims = await services.signing_keys.verify(token)
    except InvalidToken:
        issuer = services.settings.resolved_issuer
        return None, f"the access token's signature does not verify with this deployment's signing keys (published at {issuer}/api/v1/oidc/jwks)"
    issuer = services.settings.resolved_issuer
    if claims.get("iss") != issuer:
        return None, f"the access token was issued by `{claims.get('iss')}`, not by this deployment's identity provider (`{issuer}`)"
    expires = claims.get("exp")
    if not isinstance(expires, int | float):
        return None, "the access token has no expiry (`exp`)"
    if expires <= time.time():
        when = iso_of(expires)
        return None, f"the access token expired at {when}; get a new one with its refresh token (`grant_type=refresh_token`) or sign in again"
    kind = claims.get("token_type")
    if kind != "access_token":
        return (
            None,
            f"the token is a{'n' if str(kind)[:1] in 'aeiou' else ''} {kind or 'untyped token'}, not an access token (send the `access_token` of the token response)",
        )
    return claims, ""


def iso_of(epoch: float) -> str:
    return iso(datetime.fromtimestamp(epoch, UTC))


def audience_problem(services: Services, claims: dict[str, Any]) -> str:
    """Why a verified token is not for the connect API because of its audience; "" when it is."""
    client_id = claims.get("client_id")
    audience = claims.get("aud", client_id)
    if audience == client_id:
        return ""
    audiences = audience if isinstance(audience, list) else [audience]
    mcp = services.settings.public_base_url + "/mcp"
    if mcp in audiences:
        return f"the access token was issued for the MCP server (audience `{mcp}`): it opens `/mcp` only, not the connect API"
    return f"the access token was issued for another resource (audience `{audience}`), not the connect API"


async def connect_token_problem(services: Services, token: str) -> str:
    """Why an access token does not open the connect API (its checks in
    ``core.security.service.token_principal``, each with its reason)."""
    claims, why = await token_claims(services, token)
    if claims is None:
        return why
    wrong_audience = audience_problem(services, claims)
    if wrong_audience:
        return wrong_audience
    client_id = claims.get("client_id")
    if not isinstance(client_id, str):
        return "the access token names no client (`client_id`)"
    service = claims.get("sub") == client_id
    grant_id = None if service else claims.get("grant_id")
    async with services.db.session() as session:
        trust = await session.scalar(select(OidcClient.trust).where(OidcClient.client_id == client_id))
        revoked = None
        if trust is not None and isinstance(grant_id, str):
            row = (await session.execute(select(Grant.revoked_at).where(Grant.id == grant_id, Grant.client_id == client_id))).first()
            revoked = "gone" if row is None else ("revoked" if row.revoked_at is not None else None)
    if trust is None:
        return f"the app the access token was issued to (client `{client_id}`) no longer exists"
    if not service and trust not in ("first_party", "platform"):
        return (
            f"the access token was issued to a third-party app (client `{client_id}`): a user's token opens the connect API only "
            "when its app is one of the operator's own (`patchbay clients create --first-party`); a third-party app gets the user's "
            "identity, not their workspaces"
        )
    if revoked:
        return f"the user's grant to the app `{client_id}` that this token came from was {'revoked' if revoked == 'revoked' else 'removed'}: sign in again"
    return "the access token is not accepted"


# -- the platform API -----------------------------------------------------------------------------


async def platform_token_problem(services: Services, token: str) -> str:
    """Why a bearer token does not open the platform API (no DB read: the caller looks the client up)."""
    if token.startswith(KEY_PREFIX):
        return "a workspace API key opens the connect API, not the platform API"
    claims, why = await token_claims(services, token)
    if claims is None:
        return why
    if not claims.get("client_id") or claims.get("sub") != claims.get("client_id"):
        return (
            "this is a user's access token (from a sign-in); the platform API is for app backends and takes their own "
            "client_credentials token (a signed-in user's own calls use the browser session)"
        )
    wrong_audience = audience_problem(services, claims)
    return wrong_audience or "the access token is not accepted"
