"""Dynamic client registration (RFC 7591 with the rules of 2.15). authlib's registration endpoint
checks the RFC 7591 metadata against what discovery advertises; :func:`validate_metadata` adds the
rules of 2.15 (https, public clients, PKCE, lifetimes); ``[identity]`` caps the token lifetimes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from authlib.oauth2.rfc6749 import OAuth2Error
from authlib.oauth2.rfc6749.requests import JsonPayload, JsonRequest
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint, InvalidClientMetadataError

from patchbay.core.identity.clients import IssuedClient, create_client, validate_metadata
from patchbay.core.identity.discovery import discovery_document
from patchbay.core.identity.errors import OAuthRefusal

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: our own metadata, which authlib's RFC 7591 checks do not know
OWN_METADATA = ("require_pkce", "refresh_token_rotation", "application", "access_token_ttl", "refresh_token_ttl", "permissions")


class _Payload(JsonPayload):
    def __init__(self, data: dict) -> None:
        self._data = data

    @property
    def data(self) -> dict:
        return self._data


class Registration(ClientRegistrationEndpoint):
    """Open registration: anyone may register a client (as node-oidc-provider's default). What
    anyone registers is a third-party client, with lifetimes capped by ``[identity]``."""

    def __init__(self, issuer: str) -> None:
        super().__init__(server=None)
        self.issuer = issuer

    def get_server_metadata(self) -> dict:
        return discovery_document(self.issuer)

    def authenticate_token(self, request) -> bool:
        return True


def checked_metadata(services: Services, body: dict[str, Any], uri: str, headers: dict[str, str]) -> dict[str, Any]:
    """The metadata of a registration request (``body``, sent to ``uri`` with ``headers``) with its
    defaults; :class:`OAuthRefusal` with the RFC 7591 error when it is not acceptable."""
    json_request = JsonRequest("POST", uri, headers)
    json_request.payload = _Payload({k: v for k, v in body.items() if k not in OWN_METADATA})
    try:
        Registration(services.settings.resolved_issuer).extract_client_metadata(json_request)
    except InvalidClientMetadataError as error:
        raise OAuthRefusal(error.description or "invalid client metadata", error="invalid_client_metadata") from None
    except OAuth2Error as error:
        raise OAuthRefusal(error.description or error.error, error=error.error) from None
    metadata = validate_metadata(body)
    limits = services.settings.identity
    for name, most in (("access_token_ttl", limits.max_access_token_ttl), ("refresh_token_ttl", limits.max_refresh_token_ttl)):
        if metadata[name] > most:
            raise OAuthRefusal(f"{name} may be at most {most} seconds for a registered client", error="invalid_client_metadata")
    metadata["permissions"] = None  # a dynamically registered client is bound to no workspace
    return metadata


async def register_client(services: Services, body: dict[str, Any], uri: str, headers: dict[str, str]) -> IssuedClient:
    """Register a self-registered, third-party client; its secret is in the answer and nowhere else."""
    metadata = checked_metadata(services, body, uri, headers)
    async with services.db.transaction() as session:
        return await create_client(session, services.secrets, metadata, self_registered=True)
