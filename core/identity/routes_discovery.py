"""``/.well-known/openid-configuration`` (and the same document at RFC 8414's
``/.well-known/oauth-authorization-server``), the JWKS (4.23), and the RFC 9728 protected resource
metadata of the MCP server: what is advertised is exactly what is implemented."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.responses import reply, returns
from patchbay.core.identity.discovery import discovery_document, protected_resource_metadata
from patchbay.core.identity.http import PREFIX, add_route
from patchbay.core.identity.protocol_models import Jwks, OpenIdConfiguration, ProtectedResourceMetadata, oauth_errors
from patchbay.core.mcp.access import METADATA_PATH

routes = web.RouteTableDef()


@returns(OpenIdConfiguration)
@oauth_errors
async def openid_configuration(request: web.Request) -> web.Response:
    """The OpenID provider configuration document (cacheable for an hour)."""
    return reply(request, discovery_document(request.app[SERVICES].settings.resolved_issuer), headers={"Cache-Control": "public, max-age=3600"})


@returns(ProtectedResourceMetadata)
@oauth_errors
async def mcp_resource_metadata(request: web.Request) -> web.Response:
    """How an MCP client gets a token for ``/mcp`` (RFC 9728): the resource, its authorization
    server (this issuer), its scopes and how the token is sent."""
    return reply(request, protected_resource_metadata(request.app[SERVICES]), headers={"Cache-Control": "public, max-age=3600"})


@returns(Jwks)
@oauth_errors
async def jwks(request: web.Request) -> web.Response:
    """The public signing keys: the current one and, after a rotation, the previous one."""
    return reply(request, await request.app[SERVICES].signing_keys.jwks(), headers={"Cache-Control": "public, max-age=900"})


add_route(routes, ("GET",), "/.well-known/openid-configuration", openid_configuration)
add_route(routes, ("GET",), "/.well-known/oauth-authorization-server", openid_configuration)
add_route(routes, ("GET",), METADATA_PATH, mcp_resource_metadata)
add_route(routes, ("GET",), f"{PREFIX}/jwks", jwks)
