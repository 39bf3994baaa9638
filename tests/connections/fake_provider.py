"""A fake third-party provider: a real aiohttp server with an OAuth 2 authorization server
(authorization code with PKCE, rotating refresh tokens, client credentials, revocation) and an API
that checks bearer tokens and API keys. Loaded by the conftest files of tests/connections and
tests/proxy."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import time
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from patchbay import Provider, RetryHeaders, hookimpl

CLIENT_ID = "fake-client"
CLIENT_SECRET = "fake-secret"
API_KEY = "fake-api-key-123"


class FakeProvider:
    API_KEY = API_KEY
    CLIENT_ID = CLIENT_ID
    CLIENT_SECRET = CLIENT_SECRET

    def __init__(self) -> None:
        self.codes: dict[str, dict[str, Any]] = {}
        self.access_tokens: dict[str, float] = {}  # token -> expiry (epoch)
        self.refresh_tokens: set[str] = set()
        self.token_requests: list[dict[str, str]] = []
        self.refresh_calls = 0
        self.revoked: list[str] = []
        self.api_calls: list[dict[str, Any]] = []
        self.expires_in = 3600
        self.refresh_delay = 0.0
        self.refresh_error: str | None = None
        self.rate_limit_once: set[str] = set()
        self.clients = {CLIENT_ID: CLIENT_SECRET}
        self.extra_token_fields: dict[str, Any] = {}
        self.exchanged: list[str] = []
        self.base = ""
        self._runner: web.AppRunner | None = None

    # -- server ---------------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/authorize", self.authorize)
        app.router.add_post("/token", self.token)
        app.router.add_get("/token", self.exchange_token)
        app.router.add_post("/revoke", self.revoke)
        app.router.add_route("*", "/api/{tail:.*}", self.api)
        return app

    async def start(self) -> str:
        self._runner = web.AppRunner(self.app())
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base = f"http://127.0.0.1:{port}"
        return self.base

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # -- OAuth ----------------------------------------------------------------------------------

    async def authorize(self, request: web.Request) -> web.Response:
        q = request.query
        if q.get("client_id") not in self.clients:
            return web.json_response({"error": "invalid_client"}, status=400)
        if q.get("deny"):
            raise web.HTTPFound(q["redirect_uri"] + "?" + urlencode({"error": "access_denied", "error_description": "The user said no", "state": q["state"]}))
        code = secrets.token_urlsafe(12)
        self.codes[code] = {"redirect_uri": q["redirect_uri"], "challenge": q.get("code_challenge"), "scope": q.get("scope", ""), "client_id": q["client_id"]}
        raise web.HTTPFound(q["redirect_uri"] + "?" + urlencode({"code": code, "state": q["state"]}))

    def _client_ok(self, form, request) -> str | None:
        client_id, secret = form.get("client_id"), form.get("client_secret")
        header = request.headers.get("Authorization", "")
        if header.startswith("Basic "):
            client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        return client_id if client_id in self.clients and self.clients[client_id] == secret else None

    def _issue(self, *, refresh: bool = True, scope: str = "") -> dict[str, Any]:
        access = "at-" + secrets.token_urlsafe(12)
        self.access_tokens[access] = time.time() + self.expires_in
        body: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": self.expires_in, "scope": scope}
        if refresh:
            rt = "rt-" + secrets.token_urlsafe(12)
            self.refresh_tokens.add(rt)
            body["refresh_token"] = rt
        return {**body, **self.extra_token_fields}

    async def token(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        self.token_requests.append(form)
        if self._client_ok(form, request) is None:
            return web.json_response({"error": "invalid_client"}, status=401)
        grant = form.get("grant_type")
        if grant == "authorization_code":
            entry = self.codes.pop(form.get("code", ""), None)
            if entry is None or entry["redirect_uri"] != form.get("redirect_uri"):
                return web.json_response({"error": "invalid_grant", "error_description": "bad code"}, status=400)
            if entry["challenge"]:
                verifier = form.get("code_verifier", "")
                digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                if digest != entry["challenge"]:
                    return web.json_response({"error": "invalid_grant", "error_description": "PKCE verification failed"}, status=400)
            return web.json_response(self._issue(scope=entry["scope"]))
        if grant == "refresh_token":
            self.refresh_calls += 1
            if self.refresh_delay:
                await asyncio.sleep(self.refresh_delay)
            if self.refresh_error:
                return web.json_response(
                    {"error": self.refresh_error, "error_description": "refresh refused"}, status=400 if self.refresh_error == "invalid_grant" else 503
                )
            token = form.get("refresh_token")
            if token not in self.refresh_tokens:
                return web.json_response({"error": "invalid_grant", "error_description": "refresh token already used"}, status=400)
            self.refresh_tokens.discard(token)  # rotating refresh tokens
            return web.json_response(self._issue())
        if grant == "client_credentials":
            return web.json_response(self._issue(refresh=False))
        return web.json_response({"error": "unsupported_grant_type"}, status=400)

    async def exchange_token(self, request: web.Request) -> web.Response:
        """Meta's long-lived token exchange (``grant_type=fb_exchange_token``, a GET)."""
        q = request.query
        if q.get("grant_type") != "fb_exchange_token" or self.clients.get(q.get("client_id", "")) != q.get("client_secret"):
            return web.json_response({"error": {"message": "Invalid client", "type": "OAuthException", "code": 101}}, status=400)
        if self.access_tokens.get(q.get("fb_exchange_token", ""), 0) < time.time():
            return web.json_response({"error": {"message": "Error validating access token", "type": "OAuthException", "code": 190}}, status=400)
        self.exchanged.append(q["fb_exchange_token"])
        saved, self.expires_in = self.expires_in, 5_184_000
        try:
            return web.json_response(self._issue(refresh=False))
        finally:
            self.expires_in = saved

    async def revoke(self, request: web.Request) -> web.Response:
        form = await request.post()
        self.revoked.append(form.get("token", ""))
        self.refresh_tokens.discard(form.get("token", ""))
        return web.Response(status=200)

    # -- API ------------------------------------------------------------------------------------

    def _authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            token = header[7:]
            if token == API_KEY:
                return True
            expiry = self.access_tokens.get(token)
            return expiry is not None and expiry > time.time()
        if request.query.get("api_key") == API_KEY or request.headers.get("x-api-key") == API_KEY:
            return True
        if header.startswith("Basic "):
            return base64.b64decode(header[6:]).decode() == f"user:{API_KEY}"
        return False

    async def api(self, request: web.Request) -> web.StreamResponse:
        tail = request.match_info["tail"]
        body = await request.read()
        self.api_calls.append({"method": request.method, "path": "/" + tail, "headers": dict(request.headers), "query": dict(request.query), "body": body})
        if not self._authorized(request):
            return web.json_response({"message": "unauthorized"}, status=401)
        if tail == "limited" and "limited" not in self.rate_limit_once:
            self.rate_limit_once.add("limited")
            return web.json_response({"message": "slow down"}, status=429, headers={"Retry-After": "0.2"})
        if tail == "gzipped":
            import gzip

            return web.Response(body=gzip.compress(b'{"compressed": true}'), headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
        if tail == "me":
            return web.json_response({"id": "user-1", "name": "Ada Lovelace"})
        if tail == "busy":
            return web.json_response({"message": "come back later"}, status=429, headers={"Retry-After": "30"})
        if tail == "set-cookie":
            response = web.json_response({"cookie": request.headers.get("Cookie")})
            response.set_cookie("session", request.query.get("value", "x"))
            return response
        if tail == "big":
            response = web.StreamResponse(headers={"Content-Type": "application/octet-stream", "Connection": "keep-alive", "X-Upstream": "yes"})
            await response.prepare(request)
            for _ in range(64):
                await response.write(b"x" * 16384)
            await response.write_eof()
            return response
        if tail == "upload":
            return web.json_response({"received": len(body), "sha256": hashlib.sha256(body).hexdigest(), "chunked": request.headers.get("Transfer-Encoding")})
        return web.json_response(
            {
                "path": "/" + tail,
                "method": request.method,
                "query": dict(request.query),
                "body": body.decode("utf-8", "replace"),
                "contentType": request.headers.get("Content-Type"),
            },
            headers={"X-Upstream": "yes", "Keep-Alive": "timeout=5"},
        )


def definitions(base: str) -> list[Provider]:
    """Test providers at the fake server: OAuth with PKCE, API key (bearer), API key in the query,
    basic, client credentials. The server URL is a connection parameter with a default, because
    definitions must name https URLs."""
    common = {"connection_params": ("server",), "connection_param_defaults": {"server": base}}
    return [
        Provider(
            name="fakeoauth",
            display_name="Fake OAuth",
            category="crm",
            auth_mode="oauth2",
            authorization_url="{server}/authorize",
            token_url="{server}/token",
            revocation_url="{server}/revoke",
            api_base_url="{server}/api",
            scopes=("read", "write"),
            pkce=True,
            health_check="GET /me",
            capabilities=("oauth", "proxy"),
            retry_headers=RetryHeaders(retry_after="Retry-After"),
            **common,
        ),
        Provider(name="fakekey", display_name="Fake Key", category="crm", auth_mode="api_key", api_base_url="{server}/api", health_check="GET /me", **common),
        Provider(
            name="fakequery",
            display_name="Fake Query Key",
            category="crm",
            auth_mode="api_key",
            api_base_url="{server}/api",
            credential_query={"api_key": "{api_key}"},
            **common,
        ),
        Provider(name="fakebasic", display_name="Fake Basic", category="crm", auth_mode="basic", api_base_url="{server}/api", health_check="GET /me", **common),
        Provider(name="fakepublic", display_name="Fake Public", category="other", auth_mode="none", api_base_url="{server}/api", **common),
        Provider(
            name="fakecc",
            display_name="Fake CC",
            category="crm",
            auth_mode="oauth2_cc",
            token_url="{server}/token",
            api_base_url="{server}/api",
            token_auth_method="client_secret_basic",
            **common,
        ),
    ]


class SignedDeauthorization:
    """fakeoauth's deauthorization callback: ``signed_request`` = ``<sig>.<payload>`` (base64url,
    HMAC-SHA256 of the payload under the client secret), the payload's ``user_id`` the user."""

    def user(self, form, client_secret: str) -> str | None:
        encoded_sig, _, encoded_payload = str(form.get("signed_request", "")).partition(".")
        expected = base64.urlsafe_b64encode(hmac.new(client_secret.encode(), encoded_payload.encode(), hashlib.sha256).digest()).rstrip(b"=").decode()
        if not client_secret or not encoded_payload or not hmac.compare_digest(expected, encoded_sig):
            return None
        return json.loads(base64.urlsafe_b64decode(encoded_payload + "=" * (-len(encoded_payload) % 4))).get("user_id")


class FakePack:
    def __init__(self, base: str) -> None:
        self.base = base

    @hookimpl
    def register_providers(self):
        return definitions(self.base)

    @hookimpl
    def register_deauthorization_callbacks(self, register):
        register("fakeoauth", SignedDeauthorization())


def provider_settings() -> dict[str, dict[str, str]]:
    """``[providers.fakeoauth]`` with the deployment's OAuth app."""
    return {"fakeoauth": {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}}
