"""RFC 8707 resource indicators: the one resource, besides its own endpoints, that the identity
provider issues access tokens for is patchbay's MCP server (``core.mcp.access.mcp_resource``). A
``resource`` naming anything else is ``invalid_target``; one naming the MCP server makes the
authorization an agent's (a grant of chosen connections, ``core.mcp.grants``), and its access
tokens are for ``/mcp`` only: their ``aud`` is the MCP server, which the connect API and userinfo
refuse."""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchbay.core.identity.errors import OAuthRefusal
from patchbay.core.identity.server import Context
from patchbay.core.mcp.access import mcp_resource

if TYPE_CHECKING:
    from patchbay.core.services import Services


class InvalidTarget(OAuthRefusal):
    def __init__(self, message: str) -> None:
        super().__init__(message, error="invalid_target")


def requested_resource(services: Services, value: str | None) -> str | None:
    """The resource an authorization request names (None for none); :class:`InvalidTarget` for one
    this identity provider does not issue tokens for."""
    if value is None:
        return None
    if value != mcp_resource(services):
        raise InvalidTarget(f"unknown resource {value!r}: the only resource is {mcp_resource(services)}")
    return value


def check_token_resource(services: Services, ctx: Context, grant_type: str | None, value: str | None) -> None:
    """The ``resource`` of a token request: a known one, and the one the code or refresh token
    (when found) was issued for; :class:`InvalidTarget` otherwise. Left out, the tokens are for
    what was authorized."""
    if value is None:
        return
    requested_resource(services, value)
    if grant_type == "authorization_code" and ctx.code is not None:
        issued_for = ctx.code.resource
    elif grant_type == "refresh_token" and ctx.refresh is not None:
        issued_for = ctx.refresh.resource
    elif grant_type == "client_credentials":
        issued_for = None  # a client's own token is never an agent's
    else:
        return  # no such code or token: the grant answers invalid_grant
    if value != issued_for:
        raise InvalidTarget("resource is not the one this grant was authorized for")


def is_resource_token(claims: dict) -> bool:
    """Whether an access token is for a resource (RFC 8707) rather than for its client: such a token
    is not accepted by the connect API nor by userinfo."""
    return claims.get("aud", claims.get("client_id")) != claims.get("client_id")
