"""Meta's data deletion callback (https://developers.facebook.com/docs/development/create-an-app/app-dashboard/data-deletion-callback):
Meta posts ``signed_request`` to ``POST /compliance/data-deletion`` when a person asks for their
data to be deleted; it is ``<base64url signature>.<base64url JSON>``, the signature an HMAC-SHA256
of the second part under the app secret, and its JSON's ``user_id`` is the app-scoped user id.

The app secret is ``[meta] app_secret`` (``PATCHBAY_META_APP_SECRET``), declared by this pack. The
former ``[compliance] meta_app_secret`` is still read when ``[meta] app_secret`` is unset, with a
deprecation warning in the log.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
from typing import Any

import attrs

from patchbay import DeletionCallbackError, DeletionContext

log = logging.getLogger(__name__)

SOURCE = "meta"
FIELD = "signed_request"


@attrs.define(kw_only=True)
class MetaSettings:
    """The ``[meta]`` section (``PATCHBAY_META_<FIELD>``), declared with ``register_settings``."""

    #: the Meta app's secret, which signs the data deletion callback's ``signed_request``
    app_secret: str | None = None


def _b64url(value: str) -> bytes:
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


def parse_signed_request(signed_request: str, app_secret: str) -> dict[str, Any]:
    """Verify Meta's ``signed_request`` under the app secret and answer its JSON (which has a
    ``user_id``); raise :class:`DeletionCallbackError` saying what is wrong."""
    encoded_signature, _, encoded_payload = signed_request.partition(".")
    if not encoded_signature or not encoded_payload:
        raise DeletionCallbackError("Malformed signed_request")
    try:
        signature = _b64url(encoded_signature)
        data = json.loads(_b64url(encoded_payload))
    except (ValueError, UnicodeDecodeError):
        raise DeletionCallbackError("Malformed signed_request") from None
    if not isinstance(data, dict) or str(data.get("algorithm", "")).upper() != "HMAC-SHA256":
        raise DeletionCallbackError("Unsupported signed_request algorithm")
    expected = hmac.new(app_secret.encode(), encoded_payload.encode(), hashlib.sha256).digest()
    if not hmac.compare_digest(expected, signature):
        raise DeletionCallbackError("Invalid signed_request signature")
    if not data.get("user_id"):
        raise DeletionCallbackError("signed_request has no user_id")
    return data


class MetaDeletionCallback:
    """The ``meta`` data deletion callback (``register_deletion_callbacks``)."""

    field = FIELD

    def __init__(self) -> None:
        self._warned = False

    def app_secret(self, ctx: DeletionContext) -> str | None:
        """``[meta] app_secret``, else the deprecated ``[compliance] meta_app_secret``."""
        if ctx.config is not None and ctx.config.app_secret:
            return ctx.config.app_secret
        legacy = getattr(ctx.compliance, "meta_app_secret", None)
        if legacy and not self._warned:
            self._warned = True
            log.warning("[compliance] meta_app_secret is deprecated: set [meta] app_secret (PATCHBAY_META_APP_SECRET) instead")
        return legacy

    def subject(self, value: str, ctx: DeletionContext) -> str:
        secret = self.app_secret(ctx)
        if not secret:
            raise DeletionCallbackError("Meta data deletion is not configured ([meta] app_secret)")
        return str(parse_signed_request(value, secret)["user_id"])


class MetaDeauthorization:
    """Meta's deauthorization callback (``register_deauthorization_callbacks``): the same
    ``signed_request``, signed with the app secret (the OAuth client secret), naming the user who
    removed the app."""

    def user(self, form: Any, client_secret: str) -> str | None:
        signed = form.get(FIELD)
        if not signed or not client_secret:
            return None
        try:
            return str(parse_signed_request(str(signed), client_secret)["user_id"])
        except DeletionCallbackError:
            return None
