"""Who calls ``/mcp``: an access token of patchbay's identity provider whose audience is the MCP
resource (RFC 8707) and which names an active agent grant.

Token shape (the identity provider's token endpoint issues the same when ``resource`` is the MCP
URL; :func:`mint_access_token` makes one for agent sessions and tests)::

    {"iss": <issuer>, "aud": "<public base>/mcp", "sub": <user id, or "agent-session:<end user>">,
     "client_id": <client>, "grant_id": "agr_...", "scope": "mcp", "token_type": "access_token",
     "iat": ..., "exp": ..., "jti": ...}

Any other token (a connect-API token, an ID token, an API key) is refused with a challenge that
points at the protected resource metadata (RFC 9728), so that a client can start authorization.
"""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING, Any

import attrs

from patchbay.core.errors import Unauthenticated
from patchbay.core.mcp.grants import Grant, GrantState, grant_state
from patchbay.core.security.signing_keys import InvalidToken

if TYPE_CHECKING:
    from patchbay.core.services import Services

MCP_PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"


def mcp_resource(services: Services) -> str:
    """The MCP server's resource identifier: the audience of its access tokens."""
    return services.settings.public_base_url + MCP_PATH


def challenge(services: Services, error: str | None = None) -> dict[str, str]:
    """The ``WWW-Authenticate`` header of a 401 from ``/mcp`` (RFC 9728 section 5.1)."""
    value = f'Bearer resource_metadata="{services.settings.public_base_url}{METADATA_PATH}"'
    if error:
        value += f', error="{error}"'
    return {"WWW-Authenticate": value}


@attrs.frozen
class McpAccess:
    """An authenticated ``/mcp`` caller: the token's claims and its grant as read for this request
    (with the grant's active connections and the workspace's approval list)."""

    state: GrantState
    claims: dict[str, Any]

    @property
    def grant(self) -> Grant:
        return self.state.grant

    @property
    def token_id(self) -> str:
        return str(self.claims.get("jti") or self.grant.id)

    @property
    def client_id(self) -> str:
        return self.grant.client_id


async def authenticate(services: Services, authorization_header: str | None) -> McpAccess:
    """The access of ``Authorization: Bearer <token>``; :class:`Unauthenticated` (with the
    challenge header) for no token, a token not signed by us, of another issuer or audience,
    expired, without a grant, or whose grant is revoked or expired."""
    if not authorization_header or not authorization_header.startswith("Bearer "):
        raise Unauthenticated(
            f"an access token for this MCP server is required, as `Authorization: Bearer <token>` (the authorization server is named at {METADATA_PATH})",
            headers=challenge(services),
        )
    token = authorization_header[7:].strip()

    def refused(why: str) -> Unauthenticated:
        return Unauthenticated(f"the access token is not valid for this MCP server: {why}", headers=challenge(services, "invalid_token"))

    try:
        claims = await services.signing_keys.verify(token)
    except InvalidToken:
        raise refused("its signature does not verify with this deployment's signing keys") from None
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    expires = claims.get("exp")
    if claims.get("iss") != services.settings.resolved_issuer:
        raise refused(f"it was issued by `{claims.get('iss')}`, not by this deployment's identity provider")
    if mcp_resource(services) not in audiences:
        if audience is None or audience == claims.get("client_id"):
            raise refused(f"it is a token for the connect API, not for this MCP server; request one with `resource={mcp_resource(services)}`")
        raise refused(f"its audience is `{audience}`, not this MCP server (`{mcp_resource(services)}`)")
    if not isinstance(expires, int | float) or expires <= time.time():
        raise refused("it has expired; get a new one with its refresh token or authorize again")
    if not isinstance(claims.get("grant_id"), str) or claims.get("token_type", "access_token") != "access_token":
        raise refused("it is not an access token of an agent grant")
    try:
        state = await grant_state(services, claims["grant_id"])
    except Unauthenticated as error:
        raise refused(error.message) from None
    return McpAccess(state=state, claims=claims)


async def mint_access_token(services: Services, grant: Grant, *, lifetime: int) -> str:
    """An access token for ``/mcp`` on ``grant``, valid ``lifetime`` seconds."""
    now = int(time.time())
    subject = grant.user_id or f"agent-session:{grant.end_user_id or grant.workspace_id}"
    claims = {
        "iss": services.settings.resolved_issuer,
        "aud": mcp_resource(services),
        "sub": subject,
        "client_id": grant.client_id,
        "grant_id": grant.id,
        "scope": "mcp",
        "token_type": "access_token",
        "iat": now,
        "exp": now + lifetime,
        "jti": secrets.token_urlsafe(12),
    }
    return await services.signing_keys.sign(claims)
