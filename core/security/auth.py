"""The credentials of a request turned into its :class:`Principal` (``core.security.service``).

A request carries either ``x-api-key`` or an access token of our own identity provider in
``Authorization`` (with or without ``Bearer ``). Handlers declare what they need with
:func:`requires`; nothing else reads credentials.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

from aiohttp import web

from patchbay.core.appkeys import PRINCIPAL, SERVICES
from patchbay.core.errors import Forbidden, Unauthenticated
from patchbay.core.security.refusals import CONNECT_API_CREDENTIALS, connect_api_refusal
from patchbay.core.security.service import Principal, api_key_principal, token_principal


def _bearer(value: str) -> str:
    """The token of an ``Authorization`` value: ``Bearer <token>`` or a bare token; "" for another
    scheme (``Basic`` client credentials at the token endpoint are not a token to verify)."""
    scheme, space, rest = value.strip().partition(" ")
    if not space:
        return scheme
    return rest.strip() if scheme.lower() == "bearer" else ""


async def authenticate(request: web.Request) -> Principal | None:
    """The caller's principal, or None when the request carries no valid credential (cached)."""
    if PRINCIPAL in request:
        return request[PRINCIPAL]  # type: ignore[return-value]
    return await identify(request)


async def identify(request: web.Request) -> Principal | None:
    """:func:`authenticate` for the first step of a request that asks: the credentials looked up
    without asking whether the request remembers a principal yet (a request's mapping answers that
    with a raised and caught ``KeyError``, a microsecond on every request), then remembered."""
    principal = None
    api_key = request.headers.get("x-api-key")
    authorization = request.headers.get("Authorization")
    if api_key:
        principal = await api_key_principal(request.app[SERVICES], api_key.strip())
    elif token := _bearer(authorization or ""):
        principal = await token_principal(request.app[SERVICES], token)
    request[PRINCIPAL] = principal
    return principal


async def refused(request: web.Request, *, expected: str = CONNECT_API_CREDENTIALS) -> Unauthenticated:
    """The 401 for a request whose credential :func:`authenticate` refused (or that sent none): its
    message says which credential ``expected`` names and why the one sent failed, without telling
    whether an API key exists (``core.security.refusals``)."""
    return Unauthenticated(await connect_api_refusal(request.app[SERVICES], request.headers, expected=expected))


async def require_principal(request: web.Request, *permissions: str) -> Principal:
    """The authenticated workspace principal holding every one of ``permissions``; 401 or 403."""
    principal = await authenticate(request)
    if principal is None:
        raise await refused(request)
    if principal.workspace_id is None:
        if principal.kind == "access_token":
            raise Unauthenticated("Unauthorized: the access token names no workspace (organization_id); request the `organization` scope")
        raise Unauthenticated("Unauthorized: the credential names no workspace; send " + CONNECT_API_CREDENTIALS)
    missing = [p for p in permissions if not principal.can(p)]
    if missing:
        scope_hint = ""
        if principal.kind == "access_token" and "permissions" not in (principal.claims or {}):
            scope_hint = " (the access token carries no permissions: request the `permissions` scope)"
        raise Forbidden(f"Missing permission: {', '.join(missing)}{scope_hint}")
    return principal


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def requires(*permissions: str) -> Callable[[Handler], Handler]:
    """Decorate a handler: the caller must be authenticated and hold ``permissions``.

    The principal is then ``request[PRINCIPAL]``; the permissions are published in /openapi.json.
    """

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def wrapper(request: web.Request) -> web.StreamResponse:
            await require_principal(request, *permissions)
            return await handler(request)

        wrapper.patchbay_permissions = permissions  # type: ignore[attr-defined]
        wrapper.patchbay_authenticated = True  # type: ignore[attr-defined]
        return wrapper

    return decorate


def principal_of(request: web.Request) -> Principal:
    """The principal of a handler decorated with :func:`requires`."""
    principal = request.get(PRINCIPAL)
    if principal is None:  # only a handler not decorated with requires gets here
        raise Unauthenticated("Unauthorized: this route needs " + CONNECT_API_CREDENTIALS)
    return principal  # type: ignore[return-value]
