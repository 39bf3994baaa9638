"""What every identity-provider endpoint shares: CORS (4.23), no-store headers, the
``{error, error_description}`` shape (7B), the rate limits of 8B and the authlib context."""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from aiohttp import web
from authlib.consts import default_json_headers

from patchbay.core.appkeys import SERVICES
from patchbay.core.errors import RateLimited
from patchbay.core.http.client_address import client_address
from patchbay.core.http.errors import register_error_format
from patchbay.core.http.pipeline import register_answer_headers
from patchbay.core.identity.clients import Client
from patchbay.core.identity.discovery import PREFIX
from patchbay.core.identity.errors import OAuthRefusal
from patchbay.core.identity.server import AioOAuth2Request, OAuthResult
from patchbay.core.ratelimit.limiter import parse_limit
from patchbay.core.settings import RATE_LIMIT_DEFAULTS

CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type",
    "Access-Control-Max-Age": "86400",
}
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
#: Endpoints that are navigated to by a browser, not called by scripts: no CORS (RFC 9700 2.6).
NO_CORS = (f"{PREFIX}/authorize", f"{PREFIX}/login", f"{PREFIX}/consent", f"{PREFIX}/signout", f"{PREFIX}/federation/")

OAUTH_ERRORS = {
    400: "invalid_request",
    401: "invalid_client",
    403: "access_denied",
    404: "invalid_request",
    405: "invalid_request",
    413: "invalid_request",
    429: "temporarily_unavailable",
    500: "server_error",
}


def oauth_error(status: int, error: str, description: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error": error, "error_description": description}, status=status, headers={**NO_STORE, **(headers or {})})


def refusal(error: OAuthRefusal, headers: dict[str, str] | None = None) -> web.Response:
    """A service's refusal in the shape of 7B (400), with ``headers`` (the rate limit's) added."""
    return oauth_error(400, error.error, error.message, {**error.headers, **(headers or {})})


def _format_error(status: int, message: str, _request: web.Request) -> web.Response:
    """404, 405, 500 and friends under /api/v1/oidc/ in the shape of 7B."""
    if status == 429:
        message = "Rate limit exceeded"
    return oauth_error(status, OAUTH_ERRORS.get(status, "server_error" if status >= 500 else "invalid_request"), message or "error")


def wants_cors(path: str) -> bool:
    if path.startswith("/.well-known/"):
        return True
    return path.startswith(PREFIX + "/") and not path.startswith(NO_CORS)


async def preflight(_request: web.Request) -> web.Response:
    """CORS preflight of an identity-provider endpoint."""
    return web.Response(status=204)


def add_route(routes: web.RouteTableDef, methods: tuple[str, ...], path: str, handler) -> None:
    """Route ``handler`` for ``methods`` at ``path`` plus its CORS preflight."""
    for method in methods:
        routes.route(method, path)(handler)
    if wants_cors(path):
        routes.route("OPTIONS", path)(preflight)


async def rate_limit(request: web.Request, name: str, key: str | Callable[[], str]) -> dict[str, str]:
    """Count one request against ``[rate_limits] name`` for ``key`` (or what ``key()`` answers, asked
    only when the limit is on); 429 of 7B when exceeded. Returns the X-RateLimit headers to put on
    the answer."""
    services = request.app[SERVICES]
    item = parse_limit(services.settings.rate_limits.get(name, RATE_LIMIT_DEFAULTS[name]))  # settings built in code may omit a key
    if item is None:
        return {}
    if callable(key):
        key = key()
    decision = await services.rate_limiter.hit(f"oidc:{name}:{key}", item)
    headers = {"X-RateLimit-Limit": str(decision.limit), "X-RateLimit-Remaining": str(decision.remaining)}
    if not decision.allowed:
        raise RateLimited("Rate limit exceeded", retry_after=decision.retry_after, headers={**headers, **NO_STORE})
    return headers


def client_ip(request: web.Request) -> str:
    """The client's address for the per-address limits (trusted proxies honoured)."""
    return client_address(request)


def presented_credentials(request: web.Request, form) -> tuple[str | None, str | None]:
    """``(client_id, client_secret)`` of client_secret_basic, else of the form."""
    header = request.headers.get("Authorization", "")
    if header[:6].lower() == "basic ":
        try:
            decoded = base64.b64decode(header[6:].strip()).decode()
        except (binascii.Error, UnicodeDecodeError):
            return form.get("client_id"), form.get("client_secret")
        client_id, _, secret = decoded.partition(":")
        return unquote(client_id) or None, unquote(secret) or None
    return form.get("client_id"), form.get("client_secret")


def limit_key(request: web.Request, client: Client | None, secret: str | None) -> Callable[[], str]:
    """What a token, introspection or revocation request counts against: the client once its secret
    checks out, else the caller's address (a made-up client id must not open a fresh limit).
    Asked only when the limit is on (``rate_limit``), since it checks the secret."""

    def key() -> str:
        if client is not None and secret and client.check_client_secret(secret):
            return f"client:{client.client_id}"
        return f"ip:{client_ip(request)}"

    return key


@functools.lru_cache(maxsize=64)
def endpoint_uri(issuer: str, path: str) -> str:
    """The URI authlib is told a request came to: the issuer's, always https (authlib refuses
    plain-http request URIs; the URI only names the endpoint here, and TLS is the job of the proxy
    in front of us, the issuer setting says what the world sees)."""
    uri = issuer + path
    if uri.startswith("http://"):
        uri = "https://" + uri[len("http://") :]
    return uri


def oauth_request(request: web.Request, params) -> AioOAuth2Request:
    return AioOAuth2Request(request.method, endpoint_uri(request.app[SERVICES].settings.resolved_issuer, request.path), request.headers, params)


#: what authlib answers a token with (JSON, no-store), and what we answer it with
_AUTHLIB_JSON_HEADERS = list(default_json_headers)
_JSON_HEADERS = {"Content-Type": "application/json; charset=utf-8", **NO_STORE}
_JSON = json.JSONEncoder().encode


def to_response(result: OAuthResult, *, extra_headers: dict[str, str] | None = None) -> web.Response:
    if result.status == 200 and result.headers == _AUTHLIB_JSON_HEADERS and isinstance(result.body, dict) and "error" not in result.body:
        # an issued token, answered on every token request: one header dict from a prepared one
        return web.Response(status=200, body=_JSON(result.body).encode(), headers={**_JSON_HEADERS, **extra_headers} if extra_headers else _JSON_HEADERS)
    headers = {name: value for name, value in result.headers}
    headers.update(extra_headers or {})
    if result.status in (301, 302, 303):
        return web.Response(status=result.status, headers=headers)
    body: Any = result.body
    status = result.status
    if isinstance(body, dict) and body.get("error") == "invalid_client":
        status = 401  # 5B point 2, however the client authenticated
    if isinstance(body, dict) and body.get("error") and "error_description" not in body:
        body = {**body, "error_description": body["error"].replace("_", " ")}
    headers.pop("Content-Type", None)
    headers.update(NO_STORE)
    text = json.dumps(body) if body not in ("", None) else ""
    if status == 401 and "WWW-Authenticate" not in headers:
        headers["WWW-Authenticate"] = 'Basic realm="patchbay"'
    return web.Response(status=status, text=text, content_type="application/json" if text else None, headers=headers)


def setup_common(app: web.Application) -> None:
    register_error_format(app, PREFIX + "/", _format_error)
    register_answer_headers(app, wants_cors, CORS_HEADERS)
