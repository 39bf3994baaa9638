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
