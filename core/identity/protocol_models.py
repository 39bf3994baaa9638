"""What the identity provider's JSON endpoints answer: discovery, the JWKS, RFC 7591 registration,
userinfo, RFC 7662 introspection, and the ``{error, error_description}`` shape of its errors (7B);
and the forms (and queries) its endpoints and pages read, as ``/openapi.json`` documents them.
The keys are the protocols' own names (snake_case), not the connect API's."""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

from patchbay.core.http.openapi import form_model
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
    client_id_metadata_document_supported: bool


@response_model
class ProtectedResourceMetadata:
    """RFC 9728 section 2: the MCP server (``/mcp``) as an OAuth protected resource."""

    resource: str
    authorization_servers: list[str]
    scopes_supported: list[str]
    bearer_methods_supported: list[str]
    resource_name: str


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
    client_uri: NotRequired[str]
    logo_uri: NotRequired[str]
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


# -- what the endpoints read: the forms (and the authorization and end-session queries) ----------


@form_model
class TokenRequest:
    """RFC 6749 4.1.3, 6 and 4.4.2: the token request of one of the three grants. The client
    authenticates with HTTP Basic (client_secret_basic) or with ``client_id`` and
    ``client_secret`` here (client_secret_post); a public client sends its ``client_id`` alone. A
    parameter sent twice is refused."""

    grant_type: Literal["authorization_code", "refresh_token", "client_credentials"]
    code: str | None = None
    """authorization_code: the code the authorization answered (usable once)."""
    redirect_uri: str | None = None
    """authorization_code: the redirect_uri of the authorization request, identical."""
    code_verifier: str | None = None
    """authorization_code: the PKCE verifier (RFC 7636) of the request's S256 code_challenge;
    required when the request had one, refused when it had none."""
    refresh_token: str | None = None
    """refresh_token: the refresh token (rotated when the client asks for rotation)."""
    scope: str | None = None
    """refresh_token: a subset of the granted scopes; client_credentials: the scopes asked for,
    within the client's (space-separated)."""
    client_id: str | None = None
    """client_secret_post or a public client: the client's id."""
    client_secret: str | None = None
    """client_secret_post: the client's secret."""
    resource: str | None = None
    """RFC 8707: the resource the access token is for; only the MCP server (``{base}/mcp``), and only
    the one the code or refresh token was authorized for (``invalid_target`` otherwise)."""


@form_model
class TokenOfClient:
    """RFC 7662 2.1 (introspection) and RFC 7009 2.1 (revocation): a token of the calling
    confidential client, which authenticates with HTTP Basic or ``client_id`` and ``client_secret``
    here."""

    token: str
    """The token: an access token (introspection only) or a refresh token."""
    token_type_hint: Literal["access_token", "refresh_token"] | None = None
    """What ``token`` is, to look it up first as that."""
    client_id: str | None = None
    """client_secret_post: the client's id."""
    client_secret: str | None = None
    """client_secret_post: the client's secret."""


@form_model
class AuthorizationRequest:
    """OpenID Connect Core 3.1.2.1 (and RFC 6749 4.1.1, RFC 7636 4.3): the query of a GET, the form
    of a POST. A missing or unknown ``client_id``, or a ``redirect_uri`` not registered for it, is
    answered here (400); every other refusal goes back to the ``redirect_uri`` as ``error`` and
    ``error_description`` with ``state`` and ``iss``. A parameter sent twice is refused; ``request``
    and ``request_uri`` are not supported (``request_not_supported``, ``request_uri_not_supported``)."""

    response_type: Literal["code"]
    """The authorization code flow, the only one."""
    client_id: str
    """A registered client."""
    redirect_uri: str
    """One of the client's registered redirect URIs, exactly."""
    scope: str | None = None
    """Space-separated; ``openid`` for an ID token, ``offline_access`` for a refresh token; within
    the client's scopes."""
    state: str | None = None
    """Returned unchanged with the code or the error."""
    nonce: str | None = None
    """Put in the ID token unchanged."""
    code_challenge: str | None = None
    """PKCE (RFC 7636): BASE64URL(SHA-256(code_verifier)); required for a client that requires
    PKCE (every public client)."""
    code_challenge_method: Literal["S256"] | None = None
    """Must be S256 when ``code_challenge`` is sent."""
    prompt: str | None = None
    """Space-separated ``none``, ``login``, ``consent``: ``none`` answers login_required or
    consent_required rather than showing a page; ``login`` asks for the password again;
    ``consent`` asks for consent again."""
    max_age: str | None = None
    """Whole seconds: a sign-in older than this is made again."""
    login_hint: str | None = None
    """The email address the login page is filled with."""
    id_token_hint: str | None = None
    """An ID token of this issuer: a signed-in user who is not its subject signs in again."""
    idp: str | None = None
    """A configured federated identity provider to sign in with, instead of the login page."""
    kc_idp_hint: str | None = None
    """The former name of ``idp``."""
    response_mode: Literal["query"] | None = None
    """The code or the error in the redirect's query: the only mode."""
    resource: str | None = None
    """RFC 8707: the MCP server (``{base}/mcp``) for an agent's authorization: the consent page then
    asks which workspace and connections it gets, PKCE is required, and the access tokens are for
    ``/mcp`` only. Any other value is ``invalid_target``."""


@form_model
class EndSessionRequest:
    """OpenID Connect RP-Initiated Logout 1.0, section 2: the query of a GET, the form of a POST."""

    id_token_hint: str | None = None
    """An ID token of this issuer (expired is fine): its user's sessions end without asking. Without
    one, or for another user than the browser's, the user is asked first."""
    post_logout_redirect_uri: str | None = None
    """Where to go once signed out: on the origin of one of the client's redirect URIs."""
    state: str | None = None
    """Added to ``post_logout_redirect_uri`` unchanged."""
    client_id: str | None = None
    """The client asking; must be the ID token's audience when both are sent."""


@form_model
class UserInfoRequest:
    """RFC 6750 2.2: the access token in the form, when no ``Authorization`` header carries it."""

    access_token: str | None = None
    """The Bearer access token (the ``Authorization`` header takes precedence)."""


@form_model
class LoginForm:
    """The login page's form: the email and password of the authorization request it continues."""

    interaction: str
    """The sealed authorization request, from the login page's URL."""
    csrf: str
    """The page's CSRF token (paired with its cookie)."""
    email: str
    password: str


@form_model
class ConsentForm:
    """The consent page's form: allow (remembered for these scopes) or deny (access_denied)."""

    interaction: str
    """The sealed authorization request, from the consent page's URL."""
    csrf: str
    """The page's CSRF token (paired with its cookie)."""
    decision: Literal["allow", "deny"]
    """Anything but ``allow`` denies."""
    workspace: str | None = None
    """An agent's authorization (``resource``): the workspace it gets."""
    connection: str | None = None
    """An agent's authorization: a connection of that workspace it gets; sent once per connection."""


@form_model
class SignOutConfirmation:
    """The "Sign out?" page's form."""

    t: str
    """The page's ticket, bound to this browser's session and the return URL (ten minutes)."""
    csrf: str
    """The page's CSRF token (paired with its cookie)."""
