"""``Authorization: Bearer <secret>`` against a configured secret, for the operator's own routes
(``/api/cron/*``, ``/metrics``): compared in constant time, as bytes (a header that is not ASCII is
refused, never an error)."""

from __future__ import annotations

import hmac

from aiohttp import web


def bearer_matches(request: web.Request, secret: str | None) -> bool:
    """Whether ``request`` carries ``Authorization: Bearer <secret>``; never with no secret set."""
    header = request.headers.get("Authorization", "")
    if not secret or not header.startswith("Bearer "):
        return False
    # headers are decoded with surrogate escapes: encode them back the same way, never raising
    return hmac.compare_digest(header[7:].strip().encode("utf-8", "surrogateescape"), secret.encode())


def bearer_refusal(request: web.Request, secret: str | None, *, setting: str) -> str:
    """The 401 message for a request :func:`bearer_matches` refused, naming ``setting`` (the
    configuration key and environment variable that hold the secret)."""
    expected = f"`Authorization: Bearer <secret>` with the secret of {setting}"
    header = request.headers.get("Authorization", "").strip()
    if not secret:
        why = f"{setting} is not set, so this route is closed"
    elif not header:
        why = "no credential was sent"
    elif not header.startswith("Bearer "):
        why = f"the `Authorization` scheme `{header.partition(' ')[0]}` is not accepted here (only `Bearer`)"
    else:
        why = "the bearer token is not the configured secret"
    return f"Unauthorized: {why}; send {expected}"
