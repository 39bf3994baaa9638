"""Registered clients (spec 2.15): validating registration metadata, creating clients (dynamic
registration and ``patchbay clients create``), and the read-only view authlib works with."""

from __future__ import annotations

import functools
import hashlib
import hmac
import unicodedata
from typing import Any
from urllib.parse import urlsplit

import attrs
from authlib.oauth2.rfc6749 import ClientMixin
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.identity.claims import SCOPES_SUPPORTED, scope_list
from patchbay.core.identity.errors import OAuthRefusal
from patchbay.core.identity.models import TRUST_LEVELS, OidcClient
from patchbay.core.security.permissions import PERMISSIONS, permissions_for_roles
from patchbay.core.security.secrets import SecretBox, random_identifier, random_token
from patchbay.core.shared_reads import SharedReads

GRANT_TYPES = ("authorization_code", "refresh_token", "client_credentials")
AUTH_METHODS = ("client_secret_post", "client_secret_basic", "none")
CONFIDENTIAL_METHODS = ("client_secret_post", "client_secret_basic")
DEFAULT_SCOPE = "openid profile email"
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
#: the ids (and application names) of the clients of Client ID Metadata Documents
DOCUMENT_CLIENT_PREFIX = "cimd_"


class ClientMetadataError(OAuthRefusal):
    """Registration metadata is invalid (RFC 7591 ``invalid_client_metadata`` or
    ``invalid_redirect_uri``)."""

    def __init__(self, message: str, error: str = "invalid_client_metadata") -> None:
        super().__init__(message, error=error)


def _check_uri(uri: Any, name: str, *, redirect: bool = False) -> str:
    error = "invalid_redirect_uri" if redirect else "invalid_client_metadata"
    if not isinstance(uri, str) or not uri:
        raise ClientMetadataError(f"{name} must be a URL", error)
    parts = urlsplit(uri)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ClientMetadataError(f"{name} {uri!r} is not an absolute http(s) URL", error)
    if parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
        raise ClientMetadataError(f"{name} {uri!r} must use https (http only for localhost)", error)
    if redirect and parts.fragment:
        raise ClientMetadataError(f"{name} {uri!r} must not have a fragment", error)
    if redirect and "*" in uri:
        raise ClientMetadataError(f"{name} {uri!r}: wildcards are not allowed", error)
    return uri


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ClientMetadataError(f"{name} must be a positive integer (seconds)")
    return value


def validate_metadata(data: dict[str, Any]) -> dict[str, Any]:
    """Registration metadata (2.15) with its defaults applied; raises :class:`ClientMetadataError`."""
    name = data.get("client_name")
    if not isinstance(name, str) or not name.strip():
        raise ClientMetadataError("client_name is required")
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        raise ClientMetadataError("redirect_uris is required: a non-empty array of URLs", "invalid_redirect_uri")
    uris = [_check_uri(uri, "redirect_uri", redirect=True) for uri in uris]
    grant_types = data.get("grant_types", ["authorization_code"])
    if not isinstance(grant_types, list) or not grant_types or any(g not in GRANT_TYPES for g in grant_types):
        raise ClientMetadataError(f"grant_types must be a non-empty subset of {', '.join(GRANT_TYPES)}")
    method = data.get("token_endpoint_auth_method", "client_secret_post")
    if method not in AUTH_METHODS:
        raise ClientMetadataError(f"token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}")
    public = method == "none"
    if public and "client_credentials" in grant_types:
        raise ClientMetadataError("a public client (token_endpoint_auth_method none) cannot use client_credentials")
    response_types = data.get("response_types", ["code"] if "authorization_code" in grant_types else [])
    if not isinstance(response_types, list) or any(r != "code" for r in response_types):
        raise ClientMetadataError("response_types may only contain code")
    scope = data.get("scope", DEFAULT_SCOPE)
    if not isinstance(scope, str) or any(s not in SCOPES_SUPPORTED for s in scope_list(scope)):
        raise ClientMetadataError(f"scope must be space-separated values of {' '.join(SCOPES_SUPPORTED)}")
    require_pkce = data.get("require_pkce", True)
    rotation = data.get("refresh_token_rotation", public)
    if not isinstance(require_pkce, bool) or not isinstance(rotation, bool):
        raise ClientMetadataError("require_pkce and refresh_token_rotation must be booleans")
    application = data.get("application")
    if application is not None and (not isinstance(application, str) or not application.strip()):
        raise ClientMetadataError("application must be a non-empty string")
    if application is not None and application.strip().startswith(DOCUMENT_CLIENT_PREFIX):
        raise ClientMetadataError(f"application names starting with {DOCUMENT_CLIENT_PREFIX} are reserved")
    permissions = data.get("permissions")
    if permissions is not None and (not isinstance(permissions, list) or any(p not in PERMISSIONS for p in permissions)):
        raise ClientMetadataError("permissions must be a list of known permission keys")
    return {
        "client_name": name.strip(),
        "redirect_uris": uris,
        "grant_types": list(dict.fromkeys(grant_types)),
        "response_types": response_types,
        "token_endpoint_auth_method": method,
        "scope": " ".join(dict.fromkeys(scope_list(scope))),
        "client_uri": _check_uri(data["client_uri"], "client_uri") if data.get("client_uri") is not None else None,
        "logo_uri": _check_uri(data["logo_uri"], "logo_uri") if data.get("logo_uri") is not None else None,
        "require_pkce": True if public else require_pkce,  # public clients always prove possession
        "refresh_token_rotation": rotation,
        "access_token_ttl": _positive_int(data.get("access_token_ttl", 3600), "access_token_ttl"),
        "refresh_token_ttl": _positive_int(data.get("refresh_token_ttl", 86400), "refresh_token_ttl"),
        "application": application.strip() if application else None,
        "permissions": permissions,
    }


@attrs.frozen
class IssuedClient:
    row: OidcClient
    client_secret: str | None  # the only time the plaintext exists

    def registration_response(self) -> dict[str, Any]:
        """The RFC 7591 answer (4.23): the secret appears here and nowhere else."""
        row = self.row
        body = {
            "client_id": row.client_id,
            "client_id_issued_at": int(row.created_at.timestamp()),
            "client_secret_expires_at": 0,
            "client_name": row.client_name,
            "redirect_uris": row.redirect_uris,
            "grant_types": row.grant_types,
            "response_types": ["code"] if "authorization_code" in row.grant_types else [],
            "token_endpoint_auth_method": row.token_endpoint_auth_method,
            "scope": row.scope,
            "application": row.application,
            "require_pkce": row.require_pkce,
            "refresh_token_rotation": row.refresh_token_rotation,
            "access_token_ttl": row.access_token_ttl,
            "refresh_token_ttl": row.refresh_token_ttl,
        }
        # RFC 7591's members are strings: one not registered is left out, not null (the
        # TypeScript MCP SDK refuses a registration answer with ``"logo_uri": null``)
        body.update({name: value for name, value in (("client_uri", row.client_uri), ("logo_uri", row.logo_uri)) if value is not None})
        if self.client_secret is not None:
            body["client_secret"] = self.client_secret
        if row.workspace_id:
            body["workspace_id"] = row.workspace_id
        return body


class ClientConflict(OAuthRefusal):
    """The application name is taken (answered as ``invalid_client_metadata``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, error="invalid_client_metadata")


async def create_client(
    session: AsyncSession,
    box: SecretBox,
    metadata: dict[str, Any],
    *,
    workspace_id: str | None = None,
    trust: str = "third_party",
    self_registered: bool = False,
) -> IssuedClient:
    """Store a client from validated metadata; the secret is returned once and kept as a digest.
    ``trust`` is the operator's to grant (``patchbay clients create``); registration leaves the
    default and sets ``self_registered``."""
    if trust not in TRUST_LEVELS:
        raise ValueError(f"trust must be one of {', '.join(TRUST_LEVELS)}")
    application = metadata["application"] or f"app-{random_token(9)}"
    if await session.scalar(select(OidcClient.client_id).where(OidcClient.application == application)):
        raise ClientConflict(f"application {application!r} is already registered")
    secret = None if metadata["token_endpoint_auth_method"] == "none" else random_token(32)
    row = OidcClient(
        client_id=random_identifier(),
        secret_digest=box.digest(secret) if secret else None,
        application=application,
        workspace_id=workspace_id,
        trust=trust,
        self_registered=self_registered,
        **{key: value for key, value in metadata.items() if key not in ("application", "response_types")},
    )
    session.add(row)
    await session.flush()
    return IssuedClient(row, secret)


@attrs.frozen
class Client(ClientMixin):
    """A client as authlib sees it: a frozen copy of the row, safe to hand to a worker thread."""

    client_id: str
    secret_digests: tuple[str, ...]
    client_name: str
    redirect_uris: tuple[str, ...]
    grant_types: tuple[str, ...]
    token_endpoint_auth_method: str
    scope: str
    logo_uri: str | None
    client_uri: str | None
    require_pkce: bool
    refresh_token_rotation: bool
    access_token_ttl: int
    refresh_token_ttl: int
    workspace_id: str | None
    permissions: tuple[str, ...] | None
    trust: str
    self_registered: bool
    #: the Client ID Metadata Document URL the client presents as its client_id (None: registered)
    metadata_url: str | None
    box: SecretBox = attrs.field(eq=False, repr=False)
    #: SHA-256 of the last secret that checked out: the same secret again costs one hash, not an
    #: HMAC per key of the box (a list, as the class is frozen; a changed row is a new Client)
    _verified: list[bytes] = attrs.field(factory=list, init=False, eq=False, repr=False)

    @classmethod
    def from_row(cls, row: OidcClient, box: SecretBox) -> Client:
        return cls(
            client_id=row.client_id,
            secret_digests=(row.secret_digest,) if row.secret_digest else (),
            client_name=row.client_name,
            redirect_uris=tuple(row.redirect_uris),
            grant_types=tuple(row.grant_types),
            token_endpoint_auth_method=row.token_endpoint_auth_method,
            scope=row.scope,
            logo_uri=row.logo_uri,
            client_uri=row.client_uri,
            require_pkce=row.require_pkce,
            refresh_token_rotation=row.refresh_token_rotation,
            access_token_ttl=row.access_token_ttl,
            refresh_token_ttl=row.refresh_token_ttl,
            workspace_id=row.workspace_id,
            permissions=tuple(row.permissions) if row.permissions is not None else None,
            trust=row.trust or "third_party",
            self_registered=bool(row.self_registered),
            metadata_url=row.metadata_url,
            box=box,
        )

    @property
    def public_id(self) -> str:
        """The id the client presents and its tokens name: its metadata document's URL, or its id."""
        return self.metadata_url or self.client_id

    @property
    def is_public(self) -> bool:
        return self.token_endpoint_auth_method == "none"

    @property
    def is_platform(self) -> bool:
        return self.trust == "platform"

    @property
    def allowed_scopes(self) -> set[str]:
        """The client's registered scopes; ``offline_access`` comes with the refresh_token grant."""
        allowed = set(scope_list(self.scope))
        if "refresh_token" in self.grant_types:
            allowed.add("offline_access")
        return allowed

    def service_permissions(self) -> list[str]:
        """What a client_credentials token of a workspace-bound client may do in the connect API."""
        granted = permissions_for_roles(["admin"]) if self.permissions is None else frozenset(self.permissions)
        return sorted(granted)

    # -- authlib's ClientMixin ----------------------------------------------------------------

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        return None  # redirect_uri is required (4.23)

    def get_allowed_scope(self, scope: str | None) -> str | None:
        requested = scope_list(scope)
        if not requested:
            return "openid"
        if any(item not in self.allowed_scopes for item in requested):
            return None
        return " ".join(dict.fromkeys(requested))

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris  # exact match, no wildcards

    def check_client_secret(self, client_secret: str) -> bool:
        if not client_secret or not self.secret_digests:
            return False
        fingerprint = hashlib.sha256(client_secret.encode()).digest()
        verified = self._verified
        if verified and hmac.compare_digest(verified[0], fingerprint):
            return True
        presented = self.box.digests(client_secret)
        if any(hmac.compare_digest(stored, candidate) for stored in self.secret_digests for candidate in presented):
            verified[:] = [fingerprint]
            return True
        return False

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        if self.is_public:
            return method == "none" and endpoint == "token"
        return method in CONFIDENTIAL_METHODS

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code" and "authorization_code" in self.grant_types

    def check_grant_type(self, grant_type: str) -> bool:
        if grant_type == "client_credentials" and self.is_public:
            return False
        return grant_type in self.grant_types


def name_key(name: str) -> str:
    """A name as a person reads it: Unicode-compatibility folded (full-width letters are letters),
    case folded, without white space."""
    return "".join(unicodedata.normalize("NFKC", name).casefold().split())


async def borrows_a_name(session: AsyncSession, client: Client, brand_name: str) -> bool:
    """Whether a self-registered client's name reads as the deployment's name (``[branding]``) or as
    the name of a client the operator made."""
    if not client.self_registered:
        return False
    key = name_key(client.client_name)
    if key == name_key(brand_name):
        return True
    names = await session.scalars(select(OidcClient.client_name).where(OidcClient.self_registered.is_(False)))
    return any(name_key(name) == key for name in names)


class ClientCache:
    """Clients by id for a few seconds: the token endpoint reads one on every request, and a
    registration is never changed in place (a secret rotation takes effect within ``ttl``). The
    requests that find a client gone from the cache at once share one read of its row."""

    def __init__(self, box: SecretBox, ttl: float = 10.0) -> None:
        self._box = box
        self._ttl = ttl
        self._clients: SharedReads[str, Client | None] = SharedReads()

    async def get(self, session_factory, client_id: str) -> Client | None:
        return await self._clients.get(client_id, functools.partial(self._read, session_factory, client_id))

    async def _read(self, session_factory, client_id: str) -> tuple[Client | None, float]:
        async with session_factory() as session:
            row = await session.get(OidcClient, client_id)
        if row is None:
            return None, 0  # a miss is not remembered: the client may be registered next
        return Client.from_row(row, self._box), self._ttl

    def forget(self, client_id: str) -> None:
        self._clients.forget(client_id)
