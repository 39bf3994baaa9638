"""Clients known by a Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document,
https://www.ietf.org/archive/id/draft-ietf-oauth-client-id-metadata-document-03.html): an ``https``
URL presented as ``client_id`` names a JSON document of the client's metadata, which we fetch through
the outbound guard (``core.outbound``: https only, no private or loopback address, capped size and
time), check, and keep as long as its ``Cache-Control`` says, within bounds.

The URL is checked as the draft's section 3 says (https, a path, no fragment, no user info, no dot
segments) and the document as its section 4 says: its ``client_id`` is the URL exactly, it holds no
client secret, the client is public (``token_endpoint_auth_method`` ``none``), and the rest is
registration metadata as :func:`~core.identity.clients.validate_metadata` checks it (``redirect_uris``
and ``client_name`` required). Keys of our own (lifetimes, PKCE, rotation) are never read from it.

Such a client is stored as an ``oidc_clients`` row whose ``client_id`` is derived from the URL
(:func:`row_id`; the column is too short for a URL) and whose ``metadata_url`` is the URL, so that
codes, grants and refresh tokens refer to it as to any client.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import aiohttp
from sqlalchemy.exc import IntegrityError

from patchbay.core.identity.clients import DOCUMENT_CLIENT_PREFIX, Client, ClientMetadataError, validate_metadata
from patchbay.core.identity.errors import OAuthRefusal
from patchbay.core.identity.models import OidcClient
from patchbay.core.outbound import UnsafeTarget

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: how long a document is kept: its ``Cache-Control: max-age`` within these bounds (seconds), or
#: the default when it says nothing; ``no-store``/``no-cache`` keep it the least
MIN_CACHE_SECONDS = 60
MAX_CACHE_SECONDS = 24 * 3600
DEFAULT_CACHE_SECONDS = 600
#: the largest document read (the draft suggests a limit of a few kilobytes)
MAX_DOCUMENT_BYTES = 16 * 1024
FETCH_SECONDS = 10
#: the metadata read from a document; anything else in it is ignored
DOCUMENT_KEYS = ("client_name", "redirect_uris", "grant_types", "response_types", "scope", "client_uri", "logo_uri")
#: the scopes of a document that names none: the IdP's usual ones and the MCP server's
DEFAULT_SCOPE = "openid profile email mcp"


class MetadataDocumentError(OAuthRefusal):
    """The client's metadata document cannot be used (answered as ``invalid_client``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, error="invalid_client")


def is_metadata_url(client_id: str | None) -> bool:
    """Whether a ``client_id`` names a metadata document (rather than a registered client)."""
    return bool(client_id) and client_id.startswith("https://")


def row_id(url: str) -> str:
    """The ``client_id`` of the row of the document at ``url`` (48 characters)."""
    return DOCUMENT_CLIENT_PREFIX + base64.urlsafe_b64encode(hashlib.sha256(url.encode()).digest()).rstrip(b"=").decode()


def check_url(url: str) -> str:
    """``url`` when it may be a client_id (draft section 3); :class:`MetadataDocumentError` if not."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        raise MetadataDocumentError("client_id is not a valid URL") from None
    if parts.scheme != "https" or not host:
        raise MetadataDocumentError("a client_id URL must be https")
    if parts.path in ("", "/"):
        raise MetadataDocumentError("a client_id URL must have a path")
    if parts.fragment or "#" in url:
        raise MetadataDocumentError("a client_id URL must not have a fragment")
    if parts.username is not None or parts.password is not None:
        raise MetadataDocumentError("a client_id URL must not hold a user name or password")
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        raise MetadataDocumentError("a client_id URL must not have . or .. path segments")
    return url


def cache_seconds(header: str | None) -> int:
    """How long to keep a document from its ``Cache-Control``, within the bounds."""
    if not header:
        return DEFAULT_CACHE_SECONDS
    directives = [item.strip().lower() for item in header.split(",")]
    if "no-store" in directives or "no-cache" in directives:
        return MIN_CACHE_SECONDS
    for item in directives:
        found = re.fullmatch(r"max-age\s*=\s*\"?(\d+)\"?", item)
        if found:
            return max(MIN_CACHE_SECONDS, min(MAX_CACHE_SECONDS, int(found.group(1))))
    return DEFAULT_CACHE_SECONDS


def document_metadata(url: str, document: Any) -> dict[str, Any]:
    """The registration metadata of a fetched ``document`` (draft section 4), checked; raises
    :class:`MetadataDocumentError`."""
    if not isinstance(document, dict):
        raise MetadataDocumentError("the client's metadata document is not a JSON object")
    if document.get("client_id") != url:
        raise MetadataDocumentError("the client_id in the metadata document is not the URL it was fetched from")
    if "client_secret" in document or "client_secret_expires_at" in document:
        raise MetadataDocumentError("a metadata document must not hold a client secret")
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise MetadataDocumentError("a client of a metadata document must be public (token_endpoint_auth_method none)")
    chosen = {key: document[key] for key in DOCUMENT_KEYS if key in document}
    chosen.setdefault("scope", DEFAULT_SCOPE)
    try:
        return validate_metadata({**chosen, "token_endpoint_auth_method": "none", "refresh_token_rotation": True})
    except ClientMetadataError as error:
        raise MetadataDocumentError(f"the client's metadata document is not valid: {error.message}") from None


async def fetch_document(services: Services, url: str) -> tuple[dict[str, Any], int]:
    """The checked metadata at ``url`` and how long to keep it; raises :class:`MetadataDocumentError`."""
    outbound = services.outbound
    try:
        outbound.check(url)
        timeout = aiohttp.ClientTimeout(total=FETCH_SECONDS)
        async with outbound.session.get(url, allow_redirects=False, timeout=timeout, headers={"Accept": "application/json"}) as response:
            if response.status != 200:
                raise MetadataDocumentError(f"the client's metadata document answered HTTP {response.status}")
            if response.content_length is not None and response.content_length > MAX_DOCUMENT_BYTES:
                raise MetadataDocumentError("the client's metadata document is too large")
            body = await outbound.read_body(response)
            cache_control = response.headers.get("Cache-Control")
    except UnsafeTarget as error:  # a private or loopback address, literal or resolved
        raise MetadataDocumentError(f"the client's metadata document cannot be fetched: {error}") from None
    except (aiohttp.ClientError, TimeoutError) as error:
        raise MetadataDocumentError(f"the client's metadata document cannot be fetched ({type(error).__name__})") from None
    if len(body) > MAX_DOCUMENT_BYTES:
        raise MetadataDocumentError("the client's metadata document is too large")
    try:
        document = json.loads(body)
    except ValueError:
        raise MetadataDocumentError("the client's metadata document is not JSON") from None
    return document_metadata(url, document), cache_seconds(cache_control)


async def store_document_client(services: Services, url: str, metadata: dict[str, Any]) -> Client:
    """Create or update the row of the client of ``url`` from its checked metadata (another process
    may create it at the same moment: then it is updated)."""
    try:
        return await _store(services, url, metadata)
    except IntegrityError:
        return await _store(services, url, metadata)


async def _store(services: Services, url: str, metadata: dict[str, Any]) -> Client:
    client_id = row_id(url)
    fields = {key: value for key, value in metadata.items() if key not in ("application", "response_types", "permissions")}
    async with services.db.transaction() as session:
        row = await session.get(OidcClient, client_id)
        if row is None:
            row = OidcClient(client_id=client_id, application=client_id, trust="third_party", self_registered=True, metadata_url=url, permissions=None)
            session.add(row)
        for key, value in fields.items():
            setattr(row, key, value)
        await session.flush()
        client = Client.from_row(row, services.secrets)
    services.identity.clients.forget(client_id)
    return client


async def document_client(services: Services, url: str) -> Client:
    """The client of the metadata document at ``url``: kept from an earlier fetch, or fetched,
    checked and stored now; :class:`MetadataDocumentError` when it cannot be used."""
    check_url(url)

    async def read() -> tuple[Client, float]:
        metadata, seconds = await fetch_document(services, url)
        return await store_document_client(services, url, metadata), seconds

    return await services.identity.documents.get(url, read)
