"""The browser side of the identity provider: the session cookie (a random token naming a
server-side session), CSRF tokens and the signed
"interaction" that carries an authorization request through the login and consent pages."""

from __future__ import annotations

import base64
import json
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from patchbay.core.appkeys import IDP_SESSION, SERVICES
from patchbay.core.identity.service import session_of_token, sign_in
from patchbay.core.security.secrets import random_token
from patchbay.core.users.sessions import LiveSession

if TYPE_CHECKING:
    from patchbay.core.services import Services

SESSION_COOKIE = "pb_idp_session"
CSRF_COOKIE = "pb_idp_csrf"
SESSION_SECONDS = 12 * 3600
INTERACTION_SECONDS = 30 * 60


def _encode(services: Services, purpose: str, data: dict[str, Any]) -> str:
    payload = base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).rstrip(b"=").decode()
    return f"{payload}.{services.secrets.sign(f'{purpose}:{payload}'.encode())}"


def _decode(services: Services, purpose: str, value: str | None) -> dict[str, Any] | None:
    if not value or "." not in value:
        return None
    payload, _, signature = value.rpartition(".")
    if not services.secrets.verify_signature(f"{purpose}:{payload}".encode(), signature):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("exp", 0) < time.time():
        return None
    return data


def seal(services: Services, purpose: str, data: dict[str, Any], lifetime: int) -> str:
    """A signed, expiring value for a URL or a form (not encrypted: put no secret in it)."""
    return _encode(services, purpose, {**data, "exp": int(time.time()) + lifetime})


def unseal(services: Services, purpose: str, value: str | None) -> dict[str, Any] | None:
    return _decode(services, purpose, value)


LoginSession = LiveSession


def _secure(request: web.Request) -> bool:
    return request.app[SERVICES].settings.resolved_issuer.startswith("https://")


async def current_session(request: web.Request) -> LoginSession | None:
    """The live server-side session of the request's cookie (looked up once per request)."""
    if IDP_SESSION not in request:
        token = request.cookies.get(SESSION_COOKIE)
        found = None
        if token:
            found = await session_of_token(request.app[SERVICES], token)
        request[IDP_SESSION] = found
    return request[IDP_SESSION]


async def start_session(request: web.Request, response: web.StreamResponse, user_id: str) -> LoginSession:
    """Sign ``user_id`` in: a new session row, its token in the cookie of ``response``; the browser's
    previous session ends (a copy of its old cookie opens nothing)."""
    previous = await current_session(request)
    token, session = await sign_in(request.app[SERVICES], user_id, SESSION_SECONDS, previous=previous)
    response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="Lax", secure=_secure(request), path="/", max_age=SESSION_SECONDS)
    request[IDP_SESSION] = session
    return session


def clear_cookie(request: web.Request, response: web.StreamResponse) -> None:
    response.del_cookie(SESSION_COOKIE, path="/", secure=_secure(request), httponly=True, samesite="Lax")


def csrf_token(request: web.Request, response: web.StreamResponse) -> str:
    """The token for a form of ``response``; sets the CSRF cookie on it when there is none yet."""
    secret = request.cookies.get(CSRF_COOKIE)
    if not secret:
        secret = random_token(16)
        response.set_cookie(CSRF_COOKIE, secret, httponly=True, samesite="Lax", secure=_secure(request), path="/api/v1/oidc/")
    return request.app[SERVICES].secrets.sign(f"csrf:{secret}".encode())


def check_csrf(request: web.Request, presented: str | None) -> bool:
    secret = request.cookies.get(CSRF_COOKIE)
    return bool(secret and presented and request.app[SERVICES].secrets.verify_signature(f"csrf:{secret}".encode(), presented))
