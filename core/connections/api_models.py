"""The bodies the connection routes read and answer (``core.http.responses``): the models that
validate and serialize them are the ones ``/openapi.json`` publishes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from patchbay.core.errors import Invalid
from patchbay.core.http.responses import cursor_page_of, page_of, response_model

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class ApiKeyCredentials:
    """``apiKey`` (the key, a username or a client id by auth mode) and ``apiSecret``."""

    apiKey: str | None = None
    apiSecret: str | None = None


@dataclass
class ConnectDto:
    """The body of ``POST /connect/v1/providers/{providerType}/connect``."""

    credentials: ApiKeyCredentials | None = None
    metadata: dict[str, Any] | None = None
    params: dict[str, Any] | None = None


@dataclass
class UpdateConnectionDto:
    """The body of ``PATCH /connect/v1/connections/{id}``: merged into the metadata (a key set to
    null is removed)."""

    metadata: dict[str, Any]


@dataclass
class ImportedTokens:
    """OAuth tokens obtained elsewhere; ``expiresAt`` is ISO 8601 or epoch seconds."""

    accessToken: str
    refreshToken: str | None = None
    expiresAt: str | float | None = None
    scopes: list[str] | None = None


@dataclass
class ImportConnectionDto:
    """The body of ``POST /api/connections/import``."""

    providerType: str
    credentials: ImportedTokens
    metadata: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    scopes: list[str] | None = None


@dataclass
class SaveByoaCredentialDto:
    """The body of ``POST /byoa/{providerType}/credentials``: the workspace's own OAuth app;
    ``scopes`` is a list or one string of space- or comma-separated scopes."""

    clientId: Annotated[str, Field(min_length=1, pattern=r"\S")]
    clientSecret: Annotated[str, Field(min_length=1)]
    scopes: str | list[str] | None = None


def refuse_control_characters(**credentials: str | None) -> None:
    """A credential ends up in a header or a query string of the provider's API: a control
    character there (a line break) could never be sent, so it is refused naming the field
    (``credentials.apiKey``)."""
    for field, value in credentials.items():
        if value is not None and any(ord(char) < 0x20 or ord(char) == 0x7F for char in value):
            raise Invalid(f"Validation failed: credentials.{field} must not contain control characters")


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class ConnectionOut:
    """A connection as the API shows it: never its credentials."""

    id: str
    connectionId: str
    provider: str
    status: str
    health: str | None
    connectedAt: str | None
    expiresAt: str | None
    lastRefreshedAt: str | None
    lastHealthCheckAt: str | None
    refreshError: str | None
    metadata: dict[str, Any]
    params: dict[str, Any]
    scopes: list[Any]
    endUserId: str | None
    createdAt: str | None
    updatedAt: str | None


ConnectionPage = page_of(ConnectionOut)


@response_model
class Connected:
    """A connection made: ``{success, connectionId}``."""

    success: bool
    connectionId: str


@response_model
class PendingApproval:
    """The workspace's approval policy holds the request until an approver decides."""

    status: str
    approvalId: str


@response_model
class ProviderStatus:
    """The caller's connection state for a provider (``not_connected`` without one)."""

    status: str
    connectedAt: str | None
    metadata: dict[str, Any]
    connectionId: str | None
    health: str | None = None
    expiresAt: str | None = None


@response_model
class Disconnected:
    """The provider's active connections, disconnected (``revoked`` of them at the provider)."""

    success: bool
    disconnected: int
    revoked: int


@response_model
class ConnectionDeleted:
    success: bool
    revoked: int


@response_model
class ConnectionHealth:
    connectionId: str
    provider: str
    status: str
    health: str
    lastHealthCheckAt: str | None
    expiresAt: str | None
    refreshError: str | None


@response_model
class HealthReport:
    """The health of every connection with the count per health."""

    data: list[ConnectionHealth]
    summary: dict[str, int]
    total: int


@response_model
class HealthCheck:
    """The outcome of checking one connection now."""

    connectionId: str
    provider: str
    status: str
    health: str
    detail: str | None
    checkedAt: str | None


@response_model
class AuditEntry:
    """A call made with a connection (the path without its query)."""

    id: str
    connectionId: str
    provider: str
    source: str
    method: str
    path: str
    status: int
    durationMs: float
    error: str | None
    #: an MCP tool call's OAuth client and user (``end_user:<id>`` for an agent session's end user)
    clientId: str | None
    userId: str | None
    createdAt: str | None


AuditPage = cursor_page_of(AuditEntry)


@response_model
class ImportedConnection:
    success: bool
    connectionId: str


@response_model
class AccessToken:
    """A valid access token of a connection (refreshed first when it was about to expire)."""

    connectionId: str
    provider: str
    accessToken: str
    tokenType: str
    expiresAt: str | None
