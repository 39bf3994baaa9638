"""The identity provider's refusals that must reach the client with their OAuth error code."""

from __future__ import annotations

from patchbay.core.errors import Invalid


class OAuthRefusal(Invalid):
    """A request refused with an OAuth 2.0 error code (``invalid_grant``, ``invalid_client_metadata``,
    ...): the identity routes answer it as ``{"error": error, "error_description": message}``."""

    def __init__(self, message: str, *, error: str = "invalid_request", headers: dict[str, str] | None = None) -> None:
        super().__init__(message, headers=headers)
        self.error = error
