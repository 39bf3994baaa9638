"""What the identity provider's JSON endpoints answer: discovery, the JWKS, RFC 7591 registration,
userinfo, RFC 7662 introspection, and the ``{error, error_description}`` shape of its errors (7B).
The keys are the protocols' own names (snake_case), not the connect API's."""

from __future__ import annotations

from typing import Literal

from typing_extensions import NotRequired, TypedDict

from patchbay.core.http.responses import response_model, returns


@response_model
class OAuthError:
    """An OAuth 2.0 error (RFC 6749 5.2): every refusal under ``/api/v1/oidc/``."""

    error: str
    error_description: str


#: the errors of every identity-provider endpoint (``core.identity.http.oauth_error``)
oauth_errors = returns(OAuthError, status="4XX", description="Refused, as an OAuth 2.0 error (RFC 6749 5.2)")


@response_model
class OpenIdConfiguration:
    """The OpenID provider metadata (OpenID Connect Discovery 1.0, section 3): what is advertised is
    exactly what is implemented."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str
    registration_endpoint: str
    revocation_endpoint: str
    introspection_endpoint: str
    end_session_endpoint: str
    scopes_supported: list[str]
    response_types_supported: list[str]
    response_modes_supported: list[str]
    grant_types_supported: list[str]
    subject_types_supported: list[str]
    id_token_signing_alg_values_supported: list[str]
    token_endpoint_auth_methods_supported: list[str]
    introspection_endpoint_auth_methods_supported: list[str]
    revocation_endpoint_auth_methods_supported: list[str]
    code_challenge_methods_supported: list[str]
    claims_supported: list[str]
    prompt_values_supported: list[str]
    claims_parameter_supported: bool
    request_parameter_supported: bool
    request_uri_parameter_supported: bool
    authorization_response_iss_parameter_supported: bool


@response_model
class Jwk:
    """A public RSA signing key (RFC 7517, RFC 7518 6.3)."""

    kty: Literal["RSA"]
    n: str
    e: str
    kid: str
    alg: str
    use: Literal["sig"]


@response_model
class Jwks:
    """The public signing keys: the current one and, after a rotation, the previous one."""

    keys: list[Jwk]


@response_model
class ClientRegistration(TypedDict):
    """A registered client (RFC 7591 3.2.1); ``client_secret`` for a confidential client (shown
    here only), ``workspace_id`` for a client bound to a workspace."""

    client_id: str
    client_id_issued_at: int
    client_secret_expires_at: int
    client_name: str
    redirect_uris: list[str]
    grant_types: list[str]
    response_types: list[str]
    token_endpoint_auth_method: str
    scope: str
    client_uri: str | None
    logo_uri: str | None
    application: str
    require_pkce: bool
    refresh_token_rotation: bool
    access_token_ttl: int
    refresh_token_ttl: int
    client_secret: NotRequired[str]
    workspace_id: NotRequired[str]


@response_model
class OrganizationMembershipClaim:
    organization_id: str
    role: str


@response_model
class UserInfo(TypedDict):
    """The claims the access token's scopes grant (spec 2.16): ``sub`` always, the others by scope
    and only when the user has a value."""

    sub: str
    name: NotRequired[str]
    given_name: NotRequired[str]
    family_name: NotRequired[str]
    picture: NotRequired[str]
    updated_at: NotRequired[int]
    email: NotRequired[str]
    email_verified: NotRequired[bool]
    phone_number: NotRequired[str]
    organization_id: NotRequired[str]
    organization_memberships: NotRequired[list[OrganizationMembershipClaim]]
    user_type: NotRequired[str]
    permissions: NotRequired[list[str]]
    roles: NotRequired[list[str]]


@response_model
class TokenIntrospection(TypedDict):
    """RFC 7662 2.2: ``{"active": false}`` alone for a token that is not active (or not the
    caller's), its facts when it is."""

    active: bool
    scope: NotRequired[str]
    client_id: NotRequired[str]
    token_type: NotRequired[str]
    exp: NotRequired[int]
    iat: NotRequired[int]
    sub: NotRequired[str]
    iss: NotRequired[str]
    aud: NotRequired[str | list[str]]


@response_model
class TokenResponse(TypedDict):
    """RFC 6749 5.1: the access token (an RS256 JWT, ``typ`` ``at+jwt``); a refresh token when
    ``offline_access`` was granted, an ID token when ``openid`` was (OpenID Connect Core 3.1.3.3)."""

    access_token: str
    token_type: Literal["Bearer"]
    expires_in: int
    scope: str
    refresh_token: NotRequired[str]
    id_token: NotRequired[str]
