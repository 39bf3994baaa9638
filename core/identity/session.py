"""The browser side of the identity provider: the signed session cookie, CSRF tokens and the signed
"interaction" that carries an authorization request through the login and consent pages."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import attrs
from aiohttp import web

from patchbay.core.appkeys import SECRETS, SETTINGS
from patchbay.core.security.secrets import random_token

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


@attrs.frozen
class LoginSession:
    user_id: str
    auth_time: int
    sid: str


def _secure(app: web.Application) -> bool:
    return app[SETTINGS].resolved_issuer.startswith("https://")


def current_session(request: web.Request) -> LoginSession | None:
    data = _decode(request.app, "session", request.cookies.get(SESSION_COOKIE))
    if data is None:
        return None
    return LoginSession(data["u"], data["t"], data["s"])


def start_session(request: web.Request, response: web.StreamResponse, user_id: str) -> LoginSession:
    session = LoginSession(user_id, int(time.time()), random_token(12))
    value = _encode(request.app, "session", {"u": session.user_id, "t": session.auth_time, "s": session.sid, "exp": session.auth_time + SESSION_SECONDS})
    response.set_cookie(SESSION_COOKIE, value, httponly=True, samesite="Lax", secure=_secure(request.app), path="/")
    return session


def end_session(request: web.Request, response: web.StreamResponse) -> None:
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
