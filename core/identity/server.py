"""The thin adapter between aiohttp and authlib's synchronous server components.

authlib's grants and endpoints call back into storage synchronously. We never let them touch the
database: the handler first loads every row a request can need (client, code, refresh token, user)
into a :class:`Context`, authlib runs against that snapshot, and the writes it asks for are queued
on the context and applied afterwards in one transaction. client_credentials runs on the event loop
and leaves its access token unsigned for the handler to sign on a signing thread; the code and
refresh grants, whose ID token hashes the signed access token, run in a worker thread. A write that finds its row already changed (a
code or rotated refresh token used twice at the same moment) turns the answer into invalid_grant.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import attrs
from authlib.oauth2.rfc6749 import AuthorizationServer, InsecureTransportError, InvalidGrantError, InvalidRequestError, InvalidScopeError, OAuth2Request
from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant, ClientCredentialsGrant, RefreshTokenGrant
from authlib.oauth2.rfc6749.requests import OAuth2Payload
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from authlib.oauth2.rfc9207 import IssuerParameter
from authlib.oidc.core.grants import OpenIDCode, OpenIDToken
from authlib.oidc.core.util import create_half_hash
from multidict import MultiMapping
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.identity.claims import SCOPES_SUPPORTED, UserFacts, scope_list, user_claims
from patchbay.core.identity.clients import Client
from patchbay.core.identity.models import AuthorizationCode, Grant, RefreshToken
from patchbay.core.mcp.models import AgentGrant
from patchbay.core.security.secrets import SecretBox, random_token
from patchbay.core.security.signing_keys import SigningKeys, UnsignedJWT
from patchbay.core.timeutil import new_id, utcnow

CODE_LIFETIME = 60
Write = Callable[[AsyncSession], Awaitable[bool]]


class WriteConflict(RuntimeError):
    """A queued write found its row changed by a concurrent request."""


# -- snapshots of rows -------------------------------------------------------------------------


@attrs.frozen
class CodeView:
    id: str
    client_id: str
    user_id: str
    redirect_uri: str
    scope: str
    nonce: str | None
    code_challenge: str | None
    code_challenge_method: str | None
    auth_time: int
    expires_at: float
    used: bool
    grant_id: str | None  # set on exchange; for a code of a resource, the agent grant made at consent
    resource: str | None = None

    @classmethod
    def from_row(cls, row: AuthorizationCode) -> CodeView:
        return cls(
            row.id,
            row.client_id,
            row.user_id,
            row.redirect_uri,
            row.scope,
            row.nonce,
            row.code_challenge,
            row.code_challenge_method,
            row.auth_time,
            row.expires_at.timestamp(),
            row.used_at is not None,
            row.grant_id,
            row.resource,
        )

    # authlib's AuthorizationCodeMixin
    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def get_nonce(self) -> str | None:
        return self.nonce

    def get_auth_time(self) -> int:
        return self.auth_time

    def get_acr(self) -> None:
        return None

    def get_amr(self) -> None:
        return None


@attrs.frozen
class RefreshView:
    id: str
    grant_id: str
    client_id: str
    user_id: str
    scope: str
    expires_at: float
    revoked: bool
    rotated: bool
    grant_revoked: bool
    auth_time: int
    token: str
    issued_at: int
    resource: str | None = None  # the RFC 8707 resource of its grant

    def check_client(self, client: Client) -> bool:
        return self.client_id == client.client_id

    def get_scope(self) -> str:
        return self.scope

    def get_client_id(self) -> str:
        return self.client_id

    def is_expired(self) -> bool:
        return self.expires_at <= time.time()

    def is_revoked(self) -> bool:
        return self.revoked or self.grant_revoked


@attrs.frozen
class AccessView:
    """A verified access token (a JWT), as introspection and revocation see it."""

    claims: dict[str, Any]
    grant_revoked: bool = False

    def check_client(self, client: Client) -> bool:
        return self.claims.get("client_id") == client.client_id

    def get_client_id(self) -> str:
        return self.claims.get("client_id")

    def is_expired(self) -> bool:
        return self.claims.get("exp", 0) <= time.time()

    def is_revoked(self) -> bool:
        return self.grant_revoked


@attrs.define
class Context:
    """Everything one protocol request may read, and the writes it queues."""

    issuer: str
    keys: SigningKeys
    box: SecretBox
    clients: dict[str, Client] = attrs.field(factory=dict)
    users: dict[str, UserFacts] = attrs.field(factory=dict)
    code: CodeView | None = None
    refresh: RefreshView | None = None
    access: AccessView | None = None
    auth_time: int | None = None
    session_id: str | None = None  # the sign-in session an authorization code is issued in
    grant_id: str | None = None
    #: the RFC 8707 resource the access token is for (the MCP server's URL); None: the client itself
    resource: str | None = None
    #: the agent grant the consent page made (``core.mcp.grants``): the grant id of a resource's code
    agent_grant_id: str | None = None
    revoke_grant: str | None = None  # a replayed code or refresh token: revoke what it issued
    writes: list[Write] = attrs.field(factory=list)
    defer_signing: bool = False  # leave the access token in ``unsigned`` for the handler to sign
    unsigned: UnsignedJWT | None = None
    #: the client_credentials claims encoded so far: the identity runtime's, shared by its requests
    service_claims: ServiceClaims = attrs.field(factory=lambda: ServiceClaims())


CURRENT: ContextVar[Context] = ContextVar("patchbay_oauth_context")


async def apply_writes(db, ctx: Context) -> None:
    """Run the queued writes in one transaction; :class:`WriteConflict` when one lost a race."""
    if not ctx.writes and not ctx.revoke_grant:
        return
    async with db.transaction() as session:
        for write in ctx.writes:
            if not await write(session):
                raise WriteConflict()
    ctx.writes.clear()


async def revoke_grant(session: AsyncSession, grant_id: str) -> None:
    """Revoke the grant, its refresh tokens and, for a grant of the MCP resource, the agent grant of
    the same id (which ``/mcp`` reads on every call)."""
    now = utcnow()
    await session.execute(update(Grant).where(Grant.id == grant_id, Grant.revoked_at.is_(None)).values(revoked_at=now))
    await session.execute(update(RefreshToken).where(RefreshToken.grant_id == grant_id, RefreshToken.revoked_at.is_(None)).values(revoked_at=now))
    await session.execute(update(AgentGrant).where(AgentGrant.id == grant_id, AgentGrant.revoked_at.is_(None)).values(revoked_at=now))


# -- requests ------------------------------------------------------------------------------------


class _Payload(OAuth2Payload):
    def __init__(self, params: MultiMapping[str]) -> None:
        self._data = {key: params.get(key) for key in params}
        self._datalist = {key: params.getall(key) for key in params}

    @property
    def data(self) -> dict[str, Any]:
        return self._data

    @property
    def datalist(self) -> dict[str, list]:
        return self._datalist


class AioOAuth2Request(OAuth2Request):
    """An ``OAuth2Request`` built from what the aiohttp handler already read."""

    def __init__(self, method: str, uri: str, headers: MultiMapping[str], params: MultiMapping[str]) -> None:
        # authlib's __init__ only sets these, after refusing a plain-http URI by reading an
        # environment variable and parsing the URI on every request; ``oauth_request`` hands an
        # https URI only (tests/identity/test_identity_token_speed_caches.py holds both lists of
        # attributes equal)
        if not uri.startswith("https://"):
            InsecureTransportError.check(uri)
        self.method = method
        self.uri = uri
        self.headers = headers  # case-insensitive, as HTTP header names are
        self._body = None
        self.payload = _Payload(params)
        self.client = None
        self.auth_method = None
        self.user = None
        self.authorization_code = None
        self.refresh_token = None
        self.credential = None
        self._scope = None

    @property
    def args(self) -> dict[str, Any]:
        return self.payload.data

    @property
    def form(self) -> dict[str, Any]:
        return self.payload.data


@attrs.define
class OAuthResult:
    """authlib's answer ``(status, body, headers)``; ``location`` is what RFC 9207 rewrites."""

    status: int
    body: Any
    headers: list[tuple[str, str]]

    @property
    def location(self) -> str | None:
        return next((value for name, value in self.headers if name.lower() == "location"), None)

    @location.setter
    def location(self, value: str) -> None:
        self.headers = [(n, v) for n, v in self.headers if n.lower() != "location"] + [("Location", value)]


# -- tokens ---------------------------------------------------------------------------------------


class JwtIds:
    """``jti`` values, 96 random bits each, cut from one ``os.urandom`` read per 256 of them: a
    system call per token gives the GIL away, and taking it back made the event loop wait for the
    signing threads (a tenth of its time under load in a py-spy profile)."""

    SIZE = 12
    BATCH = 256

    def __init__(self) -> None:
        self._lock = threading.Lock()  # code and refresh grants run in worker threads
        self._pool = b""
        self._next = 0
        os.register_at_fork(after_in_child=self._forget)  # a child must not repeat the parent's values

    def _forget(self) -> None:
        self._pool, self._next = b"", 0

    def __call__(self) -> str:
        with self._lock:
            if self._next + self.SIZE > len(self._pool):
                self._pool, self._next = os.urandom(self.SIZE * self.BATCH), 0
            chunk = self._pool[self._next : self._next + self.SIZE]
            self._next += self.SIZE
        return base64.urlsafe_b64encode(chunk).decode()  # 16 characters, as random_token(12)


new_jti = JwtIds()


def access_token_claims(ctx: Context, client: Client, user: UserFacts | None, scope: str) -> dict[str, Any]:
    """The claims of an access token: for the client itself (the connect API, userinfo) or, with
    ``ctx.resource``, for that resource only (RFC 8707: ``aud`` is the resource, ``grant_id`` the
    agent grant, and no user claims beyond ``sub``)."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": ctx.issuer,
        "aud": client.public_id,
        "client_id": client.public_id,
        "iat": now,
        "exp": now + client.access_token_ttl,
        "scope": scope,
        "token_type": "access_token",
        "jti": new_jti(),
    }
    if user is not None and ctx.resource:
        claims.update(aud=ctx.resource, sub=user.id, grant_id=ctx.grant_id)
    elif user is not None:
        claims.update(user_claims(user, scope))
        if ctx.grant_id:
            claims["grant_id"] = ctx.grant_id
    else:
        claims["sub"] = client.client_id
        if client.workspace_id:  # a service client of one workspace acts for it in the connect API
            claims["organization_id"] = client.workspace_id
            claims["permissions"] = client.service_permissions()
    return claims


class ServiceClaims:
    """The claims of a client_credentials access token as JSON: what changes per token (``iat``,
    ``exp``, ``jti``) is formatted in, the rest (issuer, client, scope, workspace, permissions) is
    encoded once per client, scope and issuer by :func:`access_token_claims` itself. A client's
    part is remade when the client cache hands out another :class:`Client` (a changed row)."""

    LIMIT = 10_000

    def __init__(self) -> None:
        self._fixed: dict[tuple[str, str, str], tuple[Client, bytes]] = {}

    def __call__(self, ctx: Context, client: Client, scope: str) -> bytes:
        key = (ctx.issuer, client.client_id, scope)
        hit = self._fixed.get(key)
        if hit is None or hit[0] is not client:
            claims = access_token_claims(ctx, client, None, scope)
            for name in ("iat", "exp", "jti"):
                del claims[name]
            if len(self._fixed) >= self.LIMIT:
                self._fixed.clear()
            hit = self._fixed[key] = (client, json.dumps(claims, ensure_ascii=False, separators=(",", ":")).encode()[1:])  # without "{"
        now = int(time.time())
        return b'{"iat":%d,"exp":%d,"jti":"%s",' % (now, now + client.access_token_ttl, new_jti().encode()) + hit[1]


#: the access token of an answer whose signature is still to come (``Context.unsigned``)
UNSIGNED = "(unsigned)"


def generate_bearer_token(
    grant_type: str, client: Client, user: UserFacts | None = None, scope: str | None = None, expires_in: int | None = None, include_refresh_token: bool = True
) -> dict[str, Any]:
    ctx = CURRENT.get()
    scope = scope or ""
    if ctx.defer_signing and user is None:
        ctx.unsigned = ctx.keys.prepare_encoded(ctx.service_claims(ctx, client, scope), typ="at+jwt")
        access = UNSIGNED
    elif ctx.defer_signing:
        ctx.unsigned = ctx.keys.prepare(access_token_claims(ctx, client, user, scope), typ="at+jwt")
        access = UNSIGNED
    else:
        access = ctx.keys.sign_blocking(access_token_claims(ctx, client, user, scope), typ="at+jwt")
    token = {"access_token": access, "token_type": "Bearer", "expires_in": client.access_token_ttl, "scope": scope}
    if include_refresh_token and user is not None and "offline_access" in scope_list(scope):
        token["refresh_token"] = random_token(32)
    return token


def _queue_refresh(ctx: Context, client: Client, user_id: str, scope: str, refresh_token: str) -> None:
    row = RefreshToken(
        token_digest=ctx.box.digest(refresh_token),
        grant_id=ctx.grant_id,
        client_id=client.client_id,
        user_id=user_id,
        scope=scope,
        expires_at=utcnow() + timedelta(seconds=client.refresh_token_ttl),
    )

    async def write(session: AsyncSession) -> bool:
        session.add(row)
        return True

    ctx.writes.append(write)


# -- grants ---------------------------------------------------------------------------------------

ALL_TOKEN_AUTH = ["client_secret_basic", "client_secret_post", "none"]


class CodeGrant(AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ALL_TOKEN_AUTH

    def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
        ctx = CURRENT.get()
        data = request.payload.data
        row = AuthorizationCode(
            code_digest=ctx.box.digest(code),
            client_id=request.client.client_id,
            user_id=request.user.id,
            redirect_uri=data["redirect_uri"],
            scope=request.scope,
            nonce=data.get("nonce"),
            code_challenge=data.get("code_challenge"),
            code_challenge_method=data.get("code_challenge_method"),
            auth_time=ctx.auth_time or int(time.time()),
            expires_at=utcnow() + timedelta(seconds=CODE_LIFETIME),
            session_id=ctx.session_id,
            resource=ctx.resource,
            grant_id=ctx.agent_grant_id if ctx.resource else None,
        )

        async def write(session: AsyncSession) -> bool:
            session.add(row)
            return True

        ctx.writes.append(write)

    def query_authorization_code(self, code: str, client: Client) -> CodeView | None:
        ctx = CURRENT.get()
        found = ctx.code
        if found is None or found.client_id != client.client_id:
            return None
        if found.used:  # RFC 6749 4.1.2: refuse, and revoke what the first use issued
            ctx.revoke_grant = found.grant_id
            return None
        if found.expires_at <= time.time():
            return None
        return found

    def delete_authorization_code(self, authorization_code: CodeView) -> None:
        ctx = CURRENT.get()
        grant_id = ctx.grant_id

        async def write(session: AsyncSession) -> bool:
            result = await session.execute(
                update(AuthorizationCode)
                .where(AuthorizationCode.id == authorization_code.id, AuthorizationCode.used_at.is_(None))
                .values(used_at=utcnow(), grant_id=grant_id)
            )
            return result.rowcount == 1

        ctx.writes.insert(0, write)  # first: a lost race must stop before anything is stored

    def authenticate_user(self, authorization_code: CodeView) -> UserFacts | None:
        ctx = CURRENT.get()
        # a resource's grant takes the agent grant's id: its access tokens name it, /mcp reads it
        ctx.grant_id = authorization_code.grant_id if authorization_code.resource else new_id()
        ctx.resource = authorization_code.resource
        ctx.auth_time = authorization_code.auth_time
        return ctx.users.get(authorization_code.user_id)


class Pkce(CodeChallenge):
    """PKCE as 2.15 and 4.23 want it: S256 only, the method stated, required per client (always
    for public ones) and for every request of a ``resource`` (an agent's, which the MCP
    authorization specification requires it for), and a verifier without a challenge is invalid_grant."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant, redirect_uri):
        request = grant.request
        data = request.payload.data
        if data.get("resource") and not data.get("code_challenge"):  # an agent's flow (MCP authorization)
            raise InvalidRequestError("code_challenge (S256) is required with a resource", redirect_uri=redirect_uri)
        if grant.request.client.require_pkce and not data.get("code_challenge"):
            raise InvalidRequestError("code_challenge (S256) is required for this client", redirect_uri=redirect_uri)
        if data.get("code_challenge") and data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256", redirect_uri=redirect_uri)
        try:
            return super().validate_code_challenge(grant, redirect_uri)
        except InvalidRequestError as error:
            error.redirect_uri = redirect_uri
            raise

    def validate_code_verifier(self, grant, result):
        request = grant.request
        if request.form.get("code_verifier") and not request.authorization_code.code_challenge:
            raise InvalidGrantError("code_verifier sent but the authorization request had no code_challenge")
        if request.authorization_code.code_challenge and not request.form.get("code_verifier"):
            raise InvalidGrantError("code_verifier is required")
        return super().validate_code_verifier(grant, result)

    def get_authorization_code_challenge(self, authorization_code: CodeView) -> str | None:
        return authorization_code.code_challenge

    def get_authorization_code_challenge_method(self, authorization_code: CodeView) -> str | None:
        return authorization_code.code_challenge_method


class RefreshGrant(RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ALL_TOKEN_AUTH

    def authenticate_refresh_token(self, refresh_token: str) -> RefreshView | None:
        ctx = CURRENT.get()
        found = ctx.refresh
        if found is None or found.token != refresh_token or found.is_revoked() or found.is_expired():
            return None
        if found.rotated:  # reuse of a rotated token: RFC 9700 2.2.2 revokes the whole grant
            ctx.revoke_grant = found.grant_id
            return None
        return found

    def authenticate_user(self, refresh_token: RefreshView) -> UserFacts | None:
        ctx = CURRENT.get()
        ctx.grant_id = refresh_token.grant_id
        ctx.resource = refresh_token.resource
        ctx.auth_time = refresh_token.auth_time
        return ctx.users.get(refresh_token.user_id)

    def issue_token(self, user: UserFacts, refresh_token: RefreshView) -> dict[str, Any]:
        client = self.request.client
        scope = self.request.payload.scope or refresh_token.get_scope()
        token = self.generate_token(user=user, scope=scope, include_refresh_token=client.refresh_token_rotation)
        if not client.refresh_token_rotation:
            token["refresh_token"] = refresh_token.token  # not rotated (2.16): the same token again
        elif "refresh_token" not in token:
            token["refresh_token"] = random_token(32)
        return token

    def revoke_old_credential(self, refresh_token: RefreshView) -> None:
        if not self.request.client.refresh_token_rotation:
            return
        ctx = CURRENT.get()

        async def write(session: AsyncSession) -> bool:
            result = await session.execute(
                update(RefreshToken).where(RefreshToken.id == refresh_token.id, RefreshToken.rotated_at.is_(None)).values(rotated_at=utcnow())
            )
            return result.rowcount == 1

        ctx.writes.insert(0, write)


class ServiceGrant(ClientCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def validate_token_request(self):
        super().validate_token_request()
        client: Client = self.request.client
        requested = scope_list(self.request.payload.scope)
        allowed = set(scope_list(client.scope)) - {"offline_access"}
        if any(item not in allowed for item in requested):
            raise InvalidScopeError()
        self.request.scope = " ".join(requested) if requested else " ".join(s for s in scope_list(client.scope) if s in allowed)

    def generate_token(self, user=None, scope=None, grant_type=None, expires_in=None, include_refresh_token=True):
        return super().generate_token(user=None, scope=self.request.scope, include_refresh_token=False)


def save_token(token: dict[str, Any], request: OAuth2Request) -> None:
    """Called by every grant: a new refresh token, and for a code exchange the grant itself."""
    ctx = CURRENT.get()
    client: Client = request.client
    user: UserFacts | None = request.user
    if user is None:
        return
    if request.authorization_code is not None:
        code: CodeView = request.authorization_code
        grant = Grant(
            id=ctx.grant_id,
            client_id=client.client_id,
            user_id=user.id,
            scope=token.get("scope", ""),
            nonce=code.nonce,
            auth_time=code.auth_time,
            resource=code.resource,
        )

        async def write(session: AsyncSession) -> bool:
            session.add(grant)
            await session.flush()
            return True

        ctx.writes.append(write)
    presented = request.refresh_token.token if request.refresh_token is not None else None
    if token.get("refresh_token") and token["refresh_token"] != presented:
        _queue_refresh(ctx, client, user.id, token.get("scope", ""), token["refresh_token"])


# -- ID tokens ----------------------------------------------------------------------------------


class _IdTokenMixin:
    def generate_user_info(self, user: UserFacts, scope: str) -> dict[str, Any]:
        return user_claims(user, scope)

    def encode_id_token(self, token: dict[str, Any], request: OAuth2Request) -> str:
        ctx = CURRENT.get()
        client: Client = request.client
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": ctx.issuer,
            "aud": client.public_id,
            "azp": client.public_id,
            "iat": now,
            "exp": now + client.access_token_ttl,
            "token_type": "id_token",
        }
        if request.authorization_code is not None and request.authorization_code.nonce:
            claims["nonce"] = request.authorization_code.nonce
        if ctx.auth_time:
            claims["auth_time"] = ctx.auth_time
        at_hash = create_half_hash(token["access_token"], "RS256")
        claims["at_hash"] = at_hash.decode()
        if ctx.grant_id:
            claims["sid"] = ctx.grant_id
        claims.update(self.generate_user_info(request.user, token["scope"]))
        return ctx.keys.sign_blocking(claims)


class IdTokenOnCode(_IdTokenMixin, OpenIDCode):
    def exists_nonce(self, nonce: str, request: OAuth2Request) -> bool:
        return False  # nonces are the client's to check against its own session


class IdTokenOnRefresh(_IdTokenMixin, OpenIDToken):
    """A refresh of an ``openid`` grant answers a fresh ID token too (OIDC Core 12.2)."""


# -- introspection and revocation ----------------------------------------------------------------


class Introspection(IntrospectionEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def query_token(self, token_string, token_type_hint):
        ctx = CURRENT.get()
        if ctx.refresh is not None and ctx.refresh.token == token_string and token_type_hint != "access_token":
            return ctx.refresh
        if ctx.access is not None:
            return ctx.access
        return ctx.refresh if ctx.refresh is not None and ctx.refresh.token == token_string else None

    def check_permission(self, token, client, request) -> bool:
        return token.check_client(client)  # a client introspects only its own tokens

    def authenticate_token(self, request, client):
        self.check_params(request, client)
        token = self.query_token(request.form["token"], request.form.get("token_type_hint"))
        if token and self.check_permission(token, client, request):
            return token
        return None

    def introspect_token(self, token) -> dict[str, Any]:
        ctx = CURRENT.get()
        if isinstance(token, AccessView):
            c = token.claims
            return {
                "active": True,
                "scope": c.get("scope", ""),
                "client_id": c.get("client_id"),
                "token_type": "Bearer",
                "exp": c.get("exp"),
                "iat": c.get("iat"),
                "sub": c.get("sub"),
                "iss": c.get("iss"),
                "aud": c.get("aud"),
            }
        return {
            "active": True,
            "scope": token.scope,
            "client_id": token.client_id,
            "token_type": "refresh_token",
            "exp": int(token.expires_at),
            "iat": token.issued_at,
            "sub": token.user_id,
            "iss": ctx.issuer,
            "aud": token.client_id,
        }


class Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def query_token(self, token_string, token_type_hint):
        ctx = CURRENT.get()
        if ctx.refresh is not None and ctx.refresh.token == token_string:
            return ctx.refresh
        return None  # access tokens are JWTs: they cannot be revoked, they expire (3.5)

    def revoke_token(self, token: RefreshView, request) -> None:
        ctx = CURRENT.get()

        async def write(session: AsyncSession) -> bool:
            await session.execute(update(RefreshToken).where(RefreshToken.id == token.id, RefreshToken.revoked_at.is_(None)).values(revoked_at=utcnow()))
            return True

        ctx.writes.append(write)


# -- the server ---------------------------------------------------------------------------------


class Issuer(IssuerParameter):
    def __init__(self, issuer: str) -> None:
        self.issuer = issuer

    def get_issuer(self) -> str:
        return self.issuer


class PatchbayAuthorizationServer(AuthorizationServer):
    def __init__(self, issuer: str) -> None:
        super().__init__(scopes_supported=list(SCOPES_SUPPORTED))
        self.register_token_generator("default", generate_bearer_token)
        self.register_grant(CodeGrant, [Pkce(required=True), IdTokenOnCode(require_nonce=False)])
        self.register_grant(RefreshGrant, [IdTokenOnRefresh()])
        self.register_grant(ServiceGrant)
        self.register_endpoint(Introspection)
        self.register_endpoint(Revocation)
        self.register_extension(Issuer(issuer))

    def query_client(self, client_id: str) -> Client | None:
        return CURRENT.get().clients.get(client_id)

    def save_token(self, token, request) -> None:
        save_token(token, request)

    def create_oauth2_request(self, request) -> OAuth2Request:
        return request  # handlers build AioOAuth2Request themselves

    def handle_response(self, status, body, headers) -> OAuthResult:
        return OAuthResult(status, body, list(headers))

    def send_signal(self, name, *args, **kwargs) -> None:
        pass


def error_redirect(redirect_uri: str, error: str, description: str, state: str | None, issuer: str) -> str:
    params = {"error": error, "error_description": description}
    if state:
        params["state"] = state
    params["iss"] = issuer
    separator = "&" if "?" in redirect_uri else "?"
    return f"{redirect_uri}{separator}{urlencode(params)}"
