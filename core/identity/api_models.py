"""The body of dynamic client registration (``core.identity.registration``; RFC 7591 with the
rules of spec 2.15): the model ``/openapi.json`` publishes, which validates the body first (a
refusal is ``invalid_redirect_uri`` or ``invalid_client_metadata`` naming the field); authlib and
``core.identity.clients.validate_metadata`` then check what a schema cannot say (https redirect
URIs, known scopes, the lifetime caps). Other RFC 7591 metadata is taken as sent.

Also the answers of ``/api/v1/agent-grants`` (``core.identity.routes_agents``), in the connect API's
camelCase."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import Field

from patchbay.core.http.responses import response_model
from patchbay.core.identity.claims import SCOPES_SUPPORTED
from patchbay.core.identity.clients import AUTH_METHODS, DEFAULT_SCOPE, GRANT_TYPES
from patchbay.core.security.permissions import PERMISSIONS

Seconds = Annotated[int, Field(ge=1)]


@dataclass
class ClientRegistrationRequest:
    """A client to register: ``redirect_uris`` are https (or loopback) URLs; a public client
    (``token_endpoint_auth_method: none``) always uses PKCE and rotates its refresh tokens unless
    it says otherwise; lifetimes are capped by the deployment's ``[identity]`` settings."""

    client_name: Annotated[str, Field(min_length=1, pattern=r"\S")]
    redirect_uris: Annotated[list[str], Field(min_length=1)]
    grant_types: Annotated[list[Literal[GRANT_TYPES]], Field(min_length=1)] = field(default_factory=lambda: ["authorization_code"])  # type: ignore[valid-type]
    token_endpoint_auth_method: Literal[AUTH_METHODS] = "client_secret_post"  # type: ignore[valid-type]
    #: ``["code"]`` with the authorization_code grant, else ``[]``
    response_types: list[Literal["code"]] = field(default_factory=lambda: ["code"])
    scope: Annotated[str, Field(description=f"space-separated values of: {' '.join(SCOPES_SUPPORTED)}")] = DEFAULT_SCOPE
    client_uri: str | None = None
    logo_uri: str | None = None
    require_pkce: bool = True
    refresh_token_rotation: Annotated[bool, Field(description="default: true for a public client, else false")] = False
    application: Annotated[str, Field(min_length=1, pattern=r"\S")] | None = None
    access_token_ttl: Seconds = 3600
    refresh_token_ttl: Seconds = 86400
    permissions: list[Literal[PERMISSIONS]] | None = None  # type: ignore[valid-type]


@response_model
class AgentGrant:
    """An agent's authorization: the connections (and, when limited, the tools) of one workspace
    that the user gave to a client for ``/mcp``."""

    id: str
    workspaceId: str
    clientId: str
    clientName: str | None
    connectionIds: list[str]
    tools: list[str] | None
    createdAt: str
    expiresAt: str | None


@response_model
class AgentGrantList:
    data: list[AgentGrant]


@response_model
class Revoked:
    success: bool
