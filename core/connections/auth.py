"""How a provider's credentials are obtained, renewed, injected, revoked and checked.

:class:`ProviderAuth` does all of it from the provider's definition (OAuth endpoints, token auth
style, scope separator, credential templates, health check). A provider that behaves differently
registers a subclass through the ``register_auth`` hook and overrides only what differs, e.g. a
provider whose token response names the API host of the account (``instance_url``)::

    from patchbay import ProviderAuth, hookimpl

    class AcmeAuth(ProviderAuth):
        def token_set(self, provider, body):
            tokens = super().token_set(provider, body)
            return attrs.evolve(tokens, params={"instance_url": body["instance_url"]})

    @hookimpl
    def register_auth(register):
        register("acme", AcmeAuth())

Methods receive an :class:`AuthContext` (the provider, the outbound HTTP session, the OAuth app and
the connection parameters), never storage: the core stores what they return.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import zlib
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import aiohttp
import attrs
from yarl import URL

from patchbay.core.outbound import ResponseTooLarge
from patchbay.core.plugins.provider import CREDENTIAL_FIELDS as CREDENTIAL_TEMPLATE_FIELDS
from patchbay.core.plugins.provider import HOST_NAME, TEMPLATED_URL_FIELDS, Provider, host_matches, template_fields
from patchbay.core.timeutil import utcnow

if TYPE_CHECKING:
    from patchbay.core.connections.client import ConnectionClient

# ---------------------------------------------------------------------------------------------
# Values handed to and returned by the auth methods
# ---------------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class OAuthApp:
    """The OAuth client a connection uses: the deployment's (``[providers.<name>]``), the workspace's
    own (BYOA), or for client-credentials providers the connection's own."""

    client_id: str
    client_secret: str | None = attrs.field(default=None, repr=False)
    source: str = "deployment"


@attrs.frozen(kw_only=True)
class TokenSet:
    """What a token endpoint answered, normalised. ``params`` are connection parameters learnt from
    the response (an instance URL); ``metadata`` is descriptive data to show the customer."""

    access_token: str = attrs.field(repr=False)
    refresh_token: str | None = attrs.field(default=None, repr=False)
    token_type: str | None = "Bearer"
    expires_at: datetime | None = None
    scopes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    params: Mapping[str, str] = attrs.field(factory=dict, converter=dict)
    metadata: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)


class ProviderAuthError(Exception):
    """The provider refused or failed an auth request. ``error`` is the OAuth error code when the
    provider sent one; ``permanent`` is true when retrying cannot help (``invalid_grant``)."""

    PERMANENT = frozenset({"invalid_grant"})

    def __init__(self, message: str, *, error: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.error = error
        self.status = status

    @property
    def permanent(self) -> bool:
        return self.error in self.PERMANENT


class TemplateError(ValueError):
    """A URL or credential template cannot be filled (a missing or unsafe connection parameter)."""


class UnvouchedHost(ProviderAuthError):
    """The deployment's OAuth app would be sent to a host the operator did not vouch for."""


@attrs.frozen(kw_only=True)
class AuthContext:
    provider: Provider
    http: aiohttp.ClientSession
    app: OAuthApp | None = None
    params: Mapping[str, str] = attrs.field(factory=dict)
    #: the outbound guard every URL passes (raises on a refused target)
    guard: Callable[[str], str] | None = None
    #: reads a response's body within the outbound size and decompression caps
    read_body: Callable[[aiohttp.ClientResponse], Awaitable[bytes]] | None = None

    def __attrs_post_init__(self) -> None:
        # Every OAuth call (authorization URL, code exchange, refresh, revocation) is made through
        # a context: none holds the deployment's app together with parameters that move its host.
        if self.app is not None:
            check_oauth_hosts(self.provider, self.app.source, self.params)

    async def body(self, response: aiohttp.ClientResponse) -> bytes:
        """``response``'s body, read through the outbound caps when the context has them."""
        try:
            return await (self.read_body or aiohttp.ClientResponse.read)(response)
        except zlib.error:
            raise ProviderAuthError(f"{self.provider.display_name} answered a body that does not match its Content-Encoding") from None

    def url(self, template: str) -> str:
        try:
            url = fill_url(template, self.provider, self.params)
        except TemplateError as error:  # stored before its value was refused
            raise ProviderAuthError(f"{self.provider.display_name}: {error}") from None
        if self.guard is not None:
            try:
                self.guard(url)
            except ValueError as error:
                raise ProviderAuthError(f"{self.provider.display_name}: refused target: {error}") from None
        return url


# ---------------------------------------------------------------------------------------------
# Templates
# ---------------------------------------------------------------------------------------------

_PARAM_VALUE = re.compile(r"[A-Za-z0-9._~:-]+")


class _Fields(dict):
    def __missing__(self, key: str) -> str:
        raise TemplateError(f"missing connection parameter {key!r}")


def connection_params(provider: Provider, params: Mapping[str, Any] | None) -> dict[str, str]:
    """The provider's parameter defaults overlaid with ``params`` (only declared names)."""
    values = dict(provider.connection_param_defaults)
    for key, value in (params or {}).items():
        if key in provider.connection_params and value not in (None, ""):
            values[key] = str(value)
    return values


def fill_url(template: str, provider: Provider, params: Mapping[str, str]) -> str:
    """Fill a URL template. A parameter that starts the template may be a whole https origin (an
    instance URL); any other must be a plain host label or path segment, so a customer-supplied
    value cannot move the request to another host."""
    if "{" not in template:
        return template
    fields = _Fields()
    used = template_fields(template)
    for key in provider.connection_params:
        if key not in params or key not in used:
            continue
        value = str(params[key])
        if template.startswith("{" + key + "}"):
            if not re.fullmatch(r"https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[^\s?#]*)?", value):
                raise TemplateError(f"connection parameter {key!r} must be an http(s) URL")
            value = value.rstrip("/")
        elif not _PARAM_VALUE.fullmatch(value):
            raise TemplateError(f"connection parameter {key!r} has characters that are not allowed")
        fields[key] = value
    url = template.format_map(fields)
    try:
        URL(url)  # read as the sender reads it: a value that leaves no host and port to read ("host:443.evil") is refused here
    except ValueError:
        raise TemplateError(f"connection parameters {sorted(used)} do not make a valid URL of {template!r}") from None
    return url


def check_fillable(provider: Provider, params: Mapping[str, str]) -> None:
    """Fill each URL template of the definition whose parameters ``params`` or the defaults all
    give; raises :class:`TemplateError` for the first that cannot be filled."""
    values = connection_params(provider, params)
    for template in filter(None, (getattr(provider, field) for field in TEMPLATED_URL_FIELDS)):
        if not template_fields(template) - set(values):
            fill_url(template, provider, values)


def _host(url: str) -> str | None:
    """The host the request goes to, as the sender (yarl) reads it."""
    try:
        host = (URL(url).raw_host or "").rstrip(".")
    except ValueError:
        return None
    return host if HOST_NAME.match(host) else None


def _literal_hosts(provider: Provider) -> set[str]:
    """The hosts the definition's URLs name by themselves or through the parameters' defaults."""
    hosts = set()
    defaults = connection_params(provider, None)
    for template in filter(None, (getattr(provider, field) for field in TEMPLATED_URL_FIELDS)):
        try:
            hosts.add(_host(fill_url(template, provider, defaults)))
        except TemplateError:
            continue  # a parameter without a default names this host
    return hosts - {None}


def _vouched(provider: Provider, host: str | None) -> bool:
    if host is None:
        return False
    return any(host_matches(pattern, host) for pattern in provider.oauth_hosts) or host in _literal_hosts(provider)


def check_oauth_hosts(provider: Provider, source: str | None, params: Mapping[str, str]) -> None:
    """Raise :class:`UnvouchedHost` when the deployment's OAuth app (``source`` "deployment", or
    None: not chosen yet) would go to a host of the provider's OAuth URLs, filled with ``params``,
    that is neither a literal host of the definition nor matched by its ``oauth_hosts``. Another
    app (the workspace's own, a connection's client credentials) may go anywhere the outbound
    guard allows."""
    if source not in (None, "deployment"):
        return
    for template in filter(None, (provider.authorization_url, provider.token_url, provider.revocation_url)):
        try:
            url = fill_url(template, provider, params)
        except TemplateError:
            continue  # never requested: filling it again fails the same way
        if not _vouched(provider, _host(url)):
            raise UnvouchedHost(
                f"{provider.display_name}: the deployment's OAuth app is not sent to {urlsplit(url).netloc}; connect with the workspace's own "
                f"OAuth app (POST /byoa/{provider.name}/credentials), or the operator adds the host to [providers.{provider.name}] oauth_hosts",
                error="unvouched_host",
            )


def basic_pair(template: str | None, username: str, password: str) -> str:
    """HTTP Basic's ``user:password`` for a connection's stored ``username`` and ``password``, by the
    provider's ``basic_pair`` template. A connection stored before its provider declared one keeps
    working: a secret stored beside a key the template sends alone (Mailgun's user ``api`` and its
    key), or a user name stored whole (Zendesk's ``you@example.com/token``), is sent as stored."""
    if template is None:
        return f"{username}:{password}"
    user_part = template.split(":", 1)[0]
    suffix = user_part.split("{username}", 1)[1] if "{username}" in user_part else ""
    if (password and "{password}" not in template) or (suffix and username.endswith(suffix)):
        return f"{username}:{password}"
    return template.format(username=username, password=password)


def pkce_pair() -> tuple[str, str]:
    """A PKCE verifier (43 unreserved characters and more) and its S256 challenge (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def _expiry(value: Any) -> datetime | None:
    try:
        seconds = int(float(value))
    except (TypeError, ValueError):
        return None
    return utcnow() + timedelta(seconds=seconds) if seconds > 0 else None


# ---------------------------------------------------------------------------------------------
# The default, definition-driven behaviour
# ---------------------------------------------------------------------------------------------


class ProviderAuth:
    """Authentication of one provider as its definition describes it. Subclass and override what
    differs; every method has a working default."""

    #: Connection parameters this handler learns from the token response (``token_set`` puts them
    #: in ``TokenSet.params``), so an OAuth login does not ask for them.
    learned_params: tuple[str, ...] = ()

    def deferred_params(self, provider: Provider) -> tuple[str, ...]:
        """Connection parameters an OAuth login need not be given: those the authorization and
        token URLs do not use (the token response may carry them, e.g. an ``api_domain``),
        plus ``learned_params``. The callback still requires each one before it stores the
        connection."""
        used = template_fields(provider.authorization_url or "") | template_fields(provider.token_url or "")
        return tuple(p for p in provider.connection_params if p not in used or p in self.learned_params)

    # -- the OAuth authorization request ---------------------------------------------------------

    def authorization_params(self, provider: Provider, *, params: Mapping[str, str]) -> dict[str, str]:
        """Extra query parameters of the authorization URL (e.g. ``access_type=offline``)."""
        return dict(provider.authorization_params)

    def authorization_url(self, ctx: AuthContext, *, redirect_uri: str, state: str, scopes: list[str], code_challenge: str | None) -> str:
        """The provider URL the user's browser is sent to."""
        assert ctx.app is not None and ctx.provider.authorization_url
        query = {"response_type": "code", "client_id": ctx.app.client_id, "redirect_uri": redirect_uri, "state": state}
        if scopes:
            query["scope"] = ctx.provider.scope_separator.join(scopes)
        if code_challenge:
            query["code_challenge"] = code_challenge
            query["code_challenge_method"] = "S256"
        query.update(self.authorization_params(ctx.provider, params=ctx.params))
        url = ctx.url(ctx.provider.authorization_url)
        return url + ("&" if "?" in url else "?") + urlencode(query, quote_via=quote)

    # -- token endpoint --------------------------------------------------------------------------

    async def exchange_code(self, ctx: AuthContext, *, code: str, redirect_uri: str, code_verifier: str | None) -> TokenSet:
        """Trade an authorization code for tokens."""
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
        if code_verifier:
            form["code_verifier"] = code_verifier
        return await self.token_request(ctx, form)

    async def refresh(self, ctx: AuthContext, credentials: Mapping[str, Any]) -> TokenSet:
        """New tokens for a connection. OAuth: the refresh_token grant (a provider that answers
        without a new refresh token keeps the old one); client credentials: a new grant."""
        if ctx.provider.auth_mode == "oauth2_cc":
            return await self.client_credentials(ctx)
        refresh_token = credentials.get("refresh_token")
        if not refresh_token:
            raise ProviderAuthError("the connection has no refresh token", error="invalid_grant")
        return await self.token_request(ctx, {"grant_type": "refresh_token", "refresh_token": refresh_token})

    async def client_credentials(self, ctx: AuthContext) -> TokenSet:
        """A token of the client-credentials grant (``auth_mode = "oauth2_cc"``)."""
        form = {"grant_type": "client_credentials"}
        if ctx.provider.scopes:
            form["scope"] = ctx.provider.scope_separator.join(ctx.provider.scopes)
        return await self.token_request(ctx, form)

    async def token_request(self, ctx: AuthContext, form: dict[str, str]) -> TokenSet:
        """POST ``form`` to the token URL with the client authenticated as the definition says."""
        provider, oauth_app = ctx.provider, ctx.app
        if oauth_app is None or not provider.token_url:
            raise ProviderAuthError(f"{provider.name} has no OAuth client configured", error="invalid_client")
        headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"}
        form = _authenticate_client(provider, oauth_app, form, headers)
        try:
            async with ctx.http.post(ctx.url(provider.token_url), data=form, headers=headers, allow_redirects=False) as response:
                raw = await ctx.body(response)
                status = response.status
                content_type = response.headers.get("Content-Type", "")
        except ResponseTooLarge as error:
            raise ProviderAuthError(f"{provider.display_name} token endpoint answered too large a body: {error}") from None
        except (aiohttp.ClientError, TimeoutError) as error:
            raise ProviderAuthError(f"{provider.display_name} token endpoint unreachable: {type(error).__name__}") from None
        body = _parse_token_body(raw, content_type)
        if status >= 400 or "error" in body or "access_token" not in body:
            error = str(body.get("error") or "") or None
            description = body.get("error_description") or body.get("message") or (error or f"HTTP {status}")
            raise ProviderAuthError(f"{provider.display_name}: {description}", error=error, status=status)
        return self.token_set(provider, body)

    def token_set(self, provider: Provider, body: Mapping[str, Any]) -> TokenSet:
        """Read a successful token response. Override to pick extra fields (instance URLs)."""
        scope = body.get("scope")
        if isinstance(scope, str):
            scopes = tuple(s for s in re.split(r"[ ,]+", scope) if s)
        else:
            scopes = tuple(scope or ())
        return TokenSet(
            access_token=str(body["access_token"]),
            refresh_token=body.get("refresh_token"),
            token_type=body.get("token_type") or "Bearer",
            expires_at=_expiry(body.get("expires_in")),
            scopes=scopes,
            params={name: body[name].rstrip("/") for name in provider.connection_params if isinstance(body.get(name), str) and body[name]},
        )

    # -- credentials on calls --------------------------------------------------------------------

    def inject(self, provider: Provider, credentials: Mapping[str, Any], params: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
        """The headers and query parameters that carry the credential on a call to the provider."""
        fields = _Fields(params)
        for key in ("access_token", "api_key", "api_secret", "username", "password"):
            fields[key] = str(credentials.get(key) or "")
        fields["basic"] = base64.b64encode(basic_pair(provider.basic_pair, fields["username"], fields["password"]).encode()).decode()
        if provider.credential_headers or provider.credential_query:
            # a template of an optional parameter the connection does not have is not sent
            absent = {name for name in provider.optional_fields if not params.get(name)} - CREDENTIAL_TEMPLATE_FIELDS
            headers = {name: template.format_map(fields) for name, template in provider.credential_headers.items() if not template_fields(template) & absent}
            query = {name: template.format_map(fields) for name, template in provider.credential_query.items() if not template_fields(template) & absent}
            return headers, query
        if provider.auth_mode in ("oauth2", "oauth2_cc"):
            return {"Authorization": f"Bearer {fields['access_token']}"}, {}
        if provider.auth_mode == "api_key":
            return {"Authorization": f"Bearer {fields['api_key']}"}, {}
        if provider.auth_mode == "basic":
            return {"Authorization": f"Basic {fields['basic']}"}, {}
        return {}, {}

    # -- disconnect and health -------------------------------------------------------------------

    async def revoke(self, ctx: AuthContext, credentials: Mapping[str, Any]) -> bool:
        """Revoke a credential at the provider (RFC 7009) when its definition has a revocation URL.
        Answers whether the provider confirmed; failures never block a disconnect."""
        provider = ctx.provider
        token = credentials.get("refresh_token") or credentials.get("access_token")
        if not provider.revocation_url or not token:
            return False
        form = {"token": token, "token_type_hint": "refresh_token" if credentials.get("refresh_token") else "access_token"}
        headers = {"Accept": "application/json"}
        if ctx.app is not None:
            form = _authenticate_client(provider, ctx.app, form, headers)
        try:
            async with ctx.http.post(ctx.url(provider.revocation_url), data=form, headers=headers, allow_redirects=False) as response:
                return response.status < 400  # the body is not needed: released unread
        except (aiohttp.ClientError, TimeoutError):
            return False

    async def check(self, client: ConnectionClient) -> bool | None:
        """Prove the connection's credential works with the definition's ``health_check`` call.
        True: accepted; False: refused (401/403); None: no cheap check exists. Other answers raise
        :class:`ProviderAuthError` (the provider is failing, not the credential)."""
        check = client.provider.health_check
        if not check:
            return None
        method, _, path = check.partition(" ")
        response = await client.request(method, path.strip())
        if response.status in (401, 403):
            return False
        if response.status >= 400:
            raise ProviderAuthError(f"{client.provider.display_name} answered HTTP {response.status}", status=response.status)
        return True


def _authenticate_client(provider: Provider, oauth_app: OAuthApp, form: dict[str, str], headers: dict[str, str]) -> dict[str, str]:
    """Client authentication as the definition's ``token_auth_method`` says: HTTP Basic (RFC 6749
    2.3.1, form-encoded id and secret) into ``headers``, or the id and secret in the form."""
    if provider.token_auth_method == "client_secret_basic":
        pair = f"{quote(oauth_app.client_id, safe='')}:{quote(oauth_app.client_secret or '', safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        return form
    form = {**form, "client_id": oauth_app.client_id}
    if oauth_app.client_secret:
        form["client_secret"] = oauth_app.client_secret
    return form


def _parse_token_body(raw: bytes, content_type: str) -> dict[str, Any]:
    text = raw.decode("utf-8", "replace").strip()
    if not text:
        return {}
    if "json" in content_type or text.startswith("{"):
        try:
            value = json.loads(text)
            return value if isinstance(value, dict) else {}
        except ValueError:
            return {}
    return dict(parse_qsl(text))


DEFAULT_AUTH = ProviderAuth()


def auth_for(registry, provider_name: str) -> ProviderAuth:
    """The registered auth handler of a provider, or the definition-driven default."""
    return registry.get("auth", provider_name) or DEFAULT_AUTH
