"""The browser side of the identity provider: the session cookie (a random token naming a
server-side session), CSRF tokens and the signed
"interaction" that carries an authorization request through the login and consent pages."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from aiohttp import web

from patchbay.core.appkeys import DB, IDP_SESSION, SECRETS, SETTINGS
from patchbay.core.security.secrets import random_token
from patchbay.core.users.sessions import LiveSession, find_session
from patchbay.core.users.sessions import end_session as end_user_session
from patchbay.core.users.sessions import start_session as start_user_session

SESSION_COOKIE = "pb_idp_session"
CSRF_COOKIE = "pb_idp_csrf"
SESSION_SECONDS = 12 * 3600
INTERACTION_SECONDS = 30 * 60


def _encode(app: web.Application, purpose: str, data: dict[str, Any]) -> str:
    payload = base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).rstrip(b"=").decode()
    return f"{payload}.{app[SECRETS].sign(f'{purpose}:{payload}'.encode())}"


def _decode(app: web.Application, purpose: str, value: str | None) -> dict[str, Any] | None:
    if not value or "." not in value:
        return None
    payload, _, signature = value.rpartition(".")
    if not app[SECRETS].verify_signature(f"{purpose}:{payload}".encode(), signature):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("exp", 0) < time.time():
        return None
    return data


def seal(app: web.Application, purpose: str, data: dict[str, Any], lifetime: int) -> str:
    """A signed, expiring value for a URL or a form (not encrypted: put no secret in it)."""
    return _encode(app, purpose, {**data, "exp": int(time.time()) + lifetime})


def unseal(app: web.Application, purpose: str, value: str | None) -> dict[str, Any] | None:
    return _decode(app, purpose, value)


LoginSession = LiveSession


def _secure(app: web.Application) -> bool:
    return app[SETTINGS].resolved_issuer.startswith("https://")


async def current_session(request: web.Request) -> LoginSession | None:
    """The live server-side session of the request's cookie (looked up once per request)."""
    if IDP_SESSION not in request:
        token = request.cookies.get(SESSION_COOKIE)
        found = None
        if token:
            async with request.app[DB].session() as db:
                found = await find_session(db, request.app[SECRETS], token)
        request[IDP_SESSION] = found
    return request[IDP_SESSION]


async def start_session(request: web.Request, response: web.StreamResponse, user_id: str) -> LoginSession:
    """Sign ``user_id`` in: a new session row, its token in the cookie of ``response``; the browser's
    previous session ends (a copy of its old cookie opens nothing)."""
    previous = await current_session(request)
    async with request.app[DB].transaction() as db:
        if previous is not None:
            await end_user_session(db, previous.id)
        token, session = await start_user_session(db, request.app[SECRETS], user_id, SESSION_SECONDS)
    response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="Lax", secure=_secure(request.app), path="/", max_age=SESSION_SECONDS)
    request[IDP_SESSION] = session
    return session


def clear_cookie(request: web.Request, response: web.StreamResponse) -> None:
    response.del_cookie(SESSION_COOKIE, path="/", secure=_secure(request.app), httponly=True, samesite="Lax")


def csrf_token(request: web.Request, response: web.StreamResponse) -> str:
    """The token for a form of ``response``; sets the CSRF cookie on it when there is none yet."""
    secret = request.cookies.get(CSRF_COOKIE)
    if not secret:
        secret = random_token(16)
        response.set_cookie(CSRF_COOKIE, secret, httponly=True, samesite="Lax", secure=_secure(request.app), path="/api/v1/oidc/")
    return request.app[SECRETS].sign(f"csrf:{secret}".encode())


def check_csrf(request: web.Request, presented: str | None) -> bool:
    secret = request.cookies.get(CSRF_COOKIE)
    return bool(secret and presented and request.app[SECRETS].verify_signature(f"csrf:{secret}".encode(), presented))
