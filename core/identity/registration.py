"""``POST /api/v1/oidc/register``: dynamic client registration (RFC 7591 with the rules of 2.15).
authlib's registration endpoint checks the RFC 7591 metadata against what discovery advertises;
:func:`validate_metadata` adds the rules of 2.15 (https, public clients, PKCE, lifetimes)."""

from __future__ import annotations

from authlib.oauth2.rfc6749.requests import JsonPayload, JsonRequest
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint, InvalidClientMetadataError
from authlib.oauth2.rfc6749 import OAuth2Error
from aiohttp import web

from patchbay.core.appkeys import DB, SECRETS, SETTINGS
from patchbay.core.http.bodies import read_object, structure
from patchbay.core.http.errors import ApiError
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.identity.api_models import ClientRegistrationRequest
from patchbay.core.identity.clients import ClientConflict, ClientMetadataError, create_client, validate_metadata
from patchbay.core.identity.discovery import discovery_document
from patchbay.core.identity.http import NO_STORE, PREFIX, add_route, client_ip, oauth_error, rate_limit
from patchbay.core.identity.protocol_models import ClientRegistration, oauth_errors

routes = web.RouteTableDef()


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


@accepts(ClientRegistrationRequest)
@returns(ClientRegistration, status=201, description="Registered (RFC 7591 3.2.1)")
@oauth_errors
async def register(request: web.Request) -> web.Response:
    """Register a client; its secret is in this answer and never again."""
    headers = await rate_limit(request, "oidc_register", f"ip:{client_ip(request)}")
    try:
        body = await read_object(request)
        structure(body, ClientRegistrationRequest)  # the published model first: authlib's checks assume its types
    except ApiError as error:
        problem = error.message.removeprefix("Validation failed: ")
        return oauth_error(400, "invalid_redirect_uri" if problem.startswith("redirect_uris") else "invalid_client_metadata", problem, headers)
    json_request = JsonRequest(request.method, str(request.url), dict(request.headers))
    json_request.payload = _Payload({k: v for k, v in body.items() if k not in ("require_pkce", "refresh_token_rotation", "application", "access_token_ttl", "refresh_token_ttl", "permissions")})
    try:
        Registration(request.app[SETTINGS].resolved_issuer).extract_client_metadata(json_request)
        metadata = validate_metadata(body)
    except InvalidClientMetadataError as error:
        return oauth_error(400, "invalid_client_metadata", error.description or "invalid client metadata", headers)
    except OAuth2Error as error:
        return oauth_error(400, error.error, error.description or error.error, headers)
    except ClientMetadataError as error:
        return oauth_error(400, error.error, str(error), headers)
    limits = request.app[SETTINGS].identity
    for name, most in (("access_token_ttl", limits.max_access_token_ttl), ("refresh_token_ttl", limits.max_refresh_token_ttl)):
        if metadata[name] > most:
            return oauth_error(400, "invalid_client_metadata", f"{name} may be at most {most} seconds for a registered client", headers)
    metadata["permissions"] = None  # a dynamically registered client is bound to no workspace
    try:
        async with request.app[DB].transaction() as session:
            issued = await create_client(session, request.app[SECRETS], metadata, self_registered=True)
    except ClientConflict as error:
        return oauth_error(400, "invalid_client_metadata", str(error), headers)
    return reply(request, issued.registration_response(), status=201, headers={**NO_STORE, **headers})


add_route(routes, ("POST",), f"{PREFIX}/register", register)
