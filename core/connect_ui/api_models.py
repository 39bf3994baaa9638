"""The bodies the connect session API (``core.connect_ui.routes``) reads and answers: the models
that validate and serialize them are the ones ``/openapi.json`` publishes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from patchbay.core.http.bodies import read_object, structure
from patchbay.core.http.errors import bad_request
from patchbay.core.http.responses import page_of, response_model

# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


@dataclass
class EndUserDto:
    """The customer's user the session connects for: ``id`` is required."""

    id: str | None = None
    email: str | None = None
    displayName: str | None = None


@dataclass
class CreateConnectSessionDto:
    """``endUser`` is required; ``allowedProviders`` (default: every installed provider) is replaced
    by the connection's provider for a reconnect; ``expiresInMinutes`` is bounded by
    ``[connect_ui] max_session_ttl_minutes``."""

    endUser: EndUserDto | None = None
    allowedProviders: list[str] | None = None
    metadata: dict[str, Any] | None = None
    returnUrl: str | None = None
    reconnectConnectionId: str | None = None
    expiresInMinutes: int | None = None


ALLOWED_PROVIDERS_ERROR = "allowedProviders must be a non-empty list of provider names"


async def read_session_request(request: web.Request) -> CreateConnectSessionDto:
    """The body as :class:`CreateConnectSessionDto` (400 naming a field of the wrong type).
    ``allowedProviders`` that is not a list is refused here first, in the words the API has always
    used."""
    body = await read_object(request)
    if body.get("allowedProviders") is not None and not isinstance(body["allowedProviders"], list):
        raise bad_request(f"Validation failed: {ALLOWED_PROVIDERS_ERROR}")
    return structure(body, CreateConnectSessionDto)


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


@response_model
class ConnectSessionOut:
    """A session as the API shows it, never its token; ``status`` is active, used, expired or
    revoked; ``endUser`` holds ``id`` and the ``email`` and ``displayName`` given."""

    id: str
    status: str
    endUser: dict[str, str]
    allowedProviders: list[str] | None
    metadata: dict[str, Any]
    returnUrl: str | None
    reconnectConnectionId: str | None
    connectionId: str | None
    approvalId: str | None
    expiresAt: str | None
    usedAt: str | None
    revokedAt: str | None
    createdAt: str | None


@response_model
class CreatedConnectSession(ConnectSessionOut):
    """The new session with its ``token`` (shown once) and the hosted page's ``url``."""

    token: str
    url: str


ConnectSessionOutPage = page_of(ConnectSessionOut)
