"""What the identity provider advertises in its discovery document (4.23): exactly what is implemented."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from patchbay.core.identity.claims import CLAIMS_SUPPORTED, SCOPES_SUPPORTED
from patchbay.core.identity.clients import AUTH_METHODS, CONFIDENTIAL_METHODS, GRANT_TYPES
from patchbay.core.mcp.access import mcp_resource

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: where the identity provider's endpoints are, under the issuer
PREFIX = "/api/v1/oidc"


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
        "client_id_metadata_document_supported": True,
    }


#: what an agent's token may carry: ``mcp`` (the tools of the granted connections), a refresh token
MCP_SCOPES = ("mcp", "offline_access")


def protected_resource_metadata(services: Services) -> dict[str, Any]:
    """RFC 9728 section 2 for the MCP server: the resource and this issuer as its authorization server."""
    return {
        "resource": mcp_resource(services),
        "authorization_servers": [services.settings.resolved_issuer],
        "scopes_supported": list(MCP_SCOPES),
        "bearer_methods_supported": ["header"],
        "resource_name": f"{services.settings.branding.name} MCP server",
    }
