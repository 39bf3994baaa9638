"""The forms the unprefixed OAuth routes read (``core.connections.routes_oauth``), as
``/openapi.json`` documents them."""

from __future__ import annotations

from patchbay.core.http.openapi import form_model


@form_model
class BeginConfirmation:
    """The confirmation page's "Continue": posted from this service's own page (its ``Origin``)."""

    state: str
    """The login's state, from the confirmation page's URL."""


@form_model
class DeauthorizationCallback:
    """A provider's deauthorization callback, read by the provider's pack
    (``register_deauthorization_callbacks``); a workspace's own request sends no form."""

    signed_request: str | None = None
    """Meta's: ``<signature>.<payload>``, HMAC-SHA256 with the app secret (the OAuth client
    secret), naming the user who removed the app."""
