"""``/.well-known/openid-configuration`` and the JWKS (4.23): what is advertised is exactly what is
implemented."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from patchbay.core.appkeys import SETTINGS, SIGNING_KEYS
from patchbay.core.identity.claims import CLAIMS_SUPPORTED, SCOPES_SUPPORTED
from patchbay.core.identity.clients import AUTH_METHODS, CONFIDENTIAL_METHODS, GRANT_TYPES
from patchbay.core.http.responses import reply, returns
from patchbay.core.identity.http import PREFIX, add_route
from patchbay.core.identity.protocol_models import Jwks, OpenIdConfiguration, oauth_errors

routes = web.RouteTableDef()


def discovery_document(issuer: str) -> dict[str, Any]:
    base = issuer + PREFIX
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
        "userinfo_endpoint": f"{base}/userinfo",
        "jwks_uri": f"{base}/jwks",
        "registration_endpoint": f"{base}/register",
        "revocation_endpoint": f"{base}/revoke",
        "introspection_endpoint": f"{base}/introspect",
        "end_session_endpoint": f"{base}/end-session",
        "scopes_supported": list(SCOPES_SUPPORTED),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": list(GRANT_TYPES),
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
        "introspection_endpoint_auth_methods_supported": list(CONFIDENTIAL_METHODS),
        "revocation_endpoint_auth_methods_supported": list(CONFIDENTIAL_METHODS),
        "code_challenge_methods_supported": ["S256"],
        "claims_supported": list(CLAIMS_SUPPORTED),
        "prompt_values_supported": ["none", "login", "consent"],
        "claims_parameter_supported": False,
        "request_parameter_supported": False,
        "request_uri_parameter_supported": False,
        "authorization_response_iss_parameter_supported": True,
    }


@returns(OpenIdConfiguration)
@oauth_errors
async def openid_configuration(request: web.Request) -> web.Response:
    """The OpenID provider configuration document (cacheable for an hour)."""
    return reply(request, discovery_document(request.app[SETTINGS].resolved_issuer), headers={"Cache-Control": "public, max-age=3600"})


@returns(Jwks)
@oauth_errors
async def jwks(request: web.Request) -> web.Response:
    """The public signing keys: the current one and, after a rotation, the previous one."""
    return reply(request, await request.app[SIGNING_KEYS].jwks(), headers={"Cache-Control": "public, max-age=900"})


add_route(routes, ("GET",), "/.well-known/openid-configuration", openid_configuration)
add_route(routes, ("GET",), f"{PREFIX}/jwks", jwks)
