"""What the API key routes (``core.security.routes``) answer: the models that serialize them are the
ones ``/openapi.json`` publishes."""

from __future__ import annotations

from patchbay.core.http.responses import response_model


@response_model
class ApiKeyOut:
    """A key as listed: its display prefix, never the key nor its digest; ``status`` is active,
    expired or revoked."""

    id: str
    workspaceId: str
    name: str
    prefix: str
    permissions: list[str]
    status: str
    createdAt: str | None
    expiresAt: str | None
    lastUsedAt: str | None
    revokedAt: str | None


@response_model
class ApiKeyList:
    data: list[ApiKeyOut]


@response_model
class ApiKeyRevoked:
    id: str
    revoked: bool
