"""Credentials of the routes that are not one workspace's: the operator's admin API key and a
signed-in user's access token.

The operator (the SaaS running patchbay) holds ``[admin] api_key`` (``PATCHBAY_ADMIN_API_KEY``),
presented as ``x-api-key`` or ``Authorization: Bearer``; it creates, lists, changes and deletes
tenants (``/accounts``, ``POST /connect/v1/workspaces``). Unset, no request is an operator.
"""

from __future__ import annotations

import hmac

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.errors import Forbidden
from patchbay.core.security.auth import Principal, _bearer, authenticate, refused


def is_operator(request: web.Request) -> bool:
    configured = request.app[SERVICES].settings.admin.api_key
    if not configured:
        return False
    presented = request.headers.get("x-api-key") or _bearer(request.headers.get("Authorization", ""))
    return bool(presented) and hmac.compare_digest(presented.strip().encode(), configured.encode())


async def require_user(request: web.Request) -> Principal:
    """The principal of a signed-in user (an access token whose subject is a user); 401 without
    credentials, 403 for an API key or a client's own token."""
    principal = await authenticate(request)
    if principal is None:
        raise await refused(request, expected="a signed-in user's access token as `Authorization: Bearer <token>`")
    if principal.kind != "access_token" or not principal.subject or principal.subject == principal.client_id:
        raise Forbidden("This route needs a signed-in user's access token")
    return principal
