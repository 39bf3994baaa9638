"""The declarative definition of a provider.

A provider is data: where its OAuth endpoints are, where its API lives, how a credential is injected
into a proxied request, which headers tell when to retry. Packs return these from
``register_providers``; behaviour that data cannot express comes from hook implementations keyed by
the provider's ``name`` (see ``hookspecs``).

URL and credential templates use ``{placeholder}`` fields:

- in URLs (``api_base_url``, ``authorization_url``, ``token_url``, ...): the connection parameters
  named in ``connection_params`` (``https://{subdomain}.zendesk.com/api/v2``);
- in ``credential_headers`` and ``credential_query``: the credential fields ``access_token``,
  ``api_key``, ``api_secret``, ``username``, ``password`` and ``basic`` (base64 of
  ``username:password``), plus the connection parameters.

A parameter in the host of an OAuth URL (``https://{hostname}/oauth/token``) may send the
deployment's OAuth app only to a host the definition names literally (or through defaults), or that
matches one of its ``oauth_hosts`` patterns (``*.my.salesforce.com``: any name under
``my.salesforce.com``; ``login.salesforce.com``: that name; see :func:`host_matches`), on any port.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Literal

import attrs

AuthMode = Literal["api_key", "basic", "oauth2", "oauth2_cc", "none"]
AUTH_MODES: tuple[str, ...] = ("api_key", "basic", "oauth2", "oauth2_cc", "none")

#: Grouping labels a definition may use; ``category`` is the primary one.
CATEGORIES: frozenset[str] = frozenset(
    {
        "accounting",
        "ads",
        "analytics",
        "ats",
        "banking",
        "cms",
        "communication",
        "crm",
        "design",
        "dev-tools",
        "e-commerce",
        "erp",
        "gaming",
        "hr",
        "iam",
        "invoicing",
        "knowledge-base",
        "legal",
        "marketing",
        "other",
        "payment",
        "productivity",
        "search",
        "social",
        "sports",
        "storage",
        "support",
        "surveys",
        "ticketing",
        "video",
    }
)

#: Everything a provider can be said to do. ``oauth`` goes with the OAuth auth modes,
#: ``webhook_receive`` with ``webhooks=True``.
CAPABILITIES: frozenset[str] = frozenset({"oauth", "proxy", "webhook_receive", "lead_sync", "actions", "triggers", "unified_crm", "records"})

CREDENTIAL_FIELDS: frozenset[str] = frozenset({"access_token", "api_key", "api_secret", "username", "password", "basic"})

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_LABEL = r"[a-z0-9]([a-z0-9-]*[a-z0-9])?"
#: a lowercase host name
HOST_NAME = re.compile(rf"^({_LABEL}\.)*{_LABEL}$")
#: an ``oauth_hosts`` entry: a host name, or one where ``*`` stands in for labels (see
#: :func:`host_matches`) and the last two labels are literal
OAUTH_HOST_PATTERN = re.compile(rf"^(((\*|{_LABEL})\.)*{_LABEL}\.)?{_LABEL}$")


def host_matches(pattern: str, host: str) -> bool:
    """Whether ``host`` matches an ``oauth_hosts`` ``pattern``: a leading ``*`` stands for one or
    more labels (``*.my.salesforce.com``: ``acme.my.salesforce.com``, ``a--b.sandbox.my.salesforce.com``),
    any other ``*`` for exactly one (``*.authentication.*.hana.ondemand.com``), so a pattern never
    vouches for a provider's whole domain when only a part of it is the provider's own service."""
    wanted, labels = pattern.split("."), host.split(".")
    if wanted[0] == "*":
        wanted = wanted[1:]
        if len(labels) <= len(wanted):
            return False
        labels = labels[len(labels) - len(wanted) :]
    elif len(labels) != len(wanted):
        return False
    return all(want in ("*", label) for want, label in zip(wanted, labels, strict=True))


#: plain http is accepted only on the loopback interface: local fakes of a provider in development
#: and tests (``[providers.<name>] api_base_url = "http://127.0.0.1:8999"``)
LOOPBACK_HTTP = ("http://127.0.0.1:", "http://127.0.0.1/", "http://localhost:", "http://localhost/", "http://[::1]:")


class DefinitionError(ValueError):
    """A provider definition is inconsistent; the message names the provider and the field."""


TEMPLATED_URL_FIELDS = ("api_base_url", "authorization_url", "token_url", "revocation_url")


def template_fields(template: str) -> set[str]:
    """The ``{placeholder}`` names used in a template string."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field}


def _frozen_mapping(value: Mapping[str, str] | None) -> Mapping[str, str]:
    return dict(value or {})


@attrs.frozen(kw_only=True)
class RetryHeaders:
    """Response headers that tell when a rate-limited call may be tried again."""

    retry_after: str | None = None
    reset_at: str | None = None
    remaining: str | None = None


@attrs.frozen(kw_only=True)
class Provider:
    """One third-party provider. Only ``name``, ``display_name``, ``category``, ``auth_mode`` and
    ``api_base_url`` are required; the rest have defaults that fit most APIs."""

    name: str
    display_name: str
    category: str
    auth_mode: AuthMode
    api_base_url: str
    categories: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    authorization_url: str | None = None
    token_url: str | None = None
    revocation_url: str | None = None
    scopes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    scope_separator: str = " "
    authorization_params: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    pkce: bool = False
    token_auth_method: Literal["client_secret_post", "client_secret_basic"] = "client_secret_post"
    refreshes: bool = True
    credential_headers: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    credential_query: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    connection_params: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    connection_param_defaults: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    #: connection parameters only the deployment sets (a caller's value is refused); the registry
    #: adds those ``[providers.<name>] connection_param_defaults`` sets
    fixed_params: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    #: host patterns the deployment's OAuth app may be sent to besides the literal hosts of the URLs
    #: (see the module's docstring); ``[providers.<name>] oauth_hosts`` adds the operator's own
    oauth_hosts: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    health_check: str | None = None
    retry_headers: RetryHeaders = attrs.field(factory=RetryHeaders)
    webhooks: bool = False
    capabilities: tuple[str, ...] = attrs.field(default=("proxy",), converter=tuple)
    is_available: bool = True
    #: the provider's own page on its API's authentication, linked from the connect form
    docs_url: str | None = None
    #: the connect form's words for a field where the provider's docs name it otherwise than the auth
    #: mode does (Twilio's "Account SID"): keys ``apiKey``, ``apiSecret`` or a connection parameter
    field_labels: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    #: one line under a field: where the end user finds the value, in the provider's words
    field_help: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    #: fields that may be left out (``apiSecret`` or connection parameters): a credential template
    #: that uses an absent parameter is not sent (Stripe's ``Stripe-Context`` header)
    optional_fields: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    #: ``basic`` only: the password sent beside an API key given as the Basic username, so the form
    #: asks for the key alone (Stripe: empty; Freshdesk: any dummy text, ``X``)
    basic_password: str | None = None
    #: ``basic`` only: the ``user:password`` pair the ``{basic}`` credential field encodes, as a
    #: template of the asked ``{username}`` (apiKey) and ``{password}`` (apiSecret) when the provider
    #: wants another than ``{username}:{password}`` (lemlist: ``:{username}``, the key as the password
    #: with an empty user; Zendesk API tokens: ``{username}/token:{password}``)
    basic_pair: str | None = None

    @property
    def requires_oauth(self) -> bool:
        """True when the provider connects through the OAuth login flow."""
        return self.auth_mode == "oauth2"

    @property
    def all_categories(self) -> tuple[str, ...]:
        return (self.category, *[c for c in self.categories if c != self.category])

    def templated_params(self) -> set[str]:
        """The connection parameters some template of the definition uses (its URLs and its
        credential headers and query)."""
        urls = [getattr(self, field) for field in TEMPLATED_URL_FIELDS]
        templates = [*(url for url in urls if url), *self.credential_headers.values(), *self.credential_query.values()]
        return set().union(*(template_fields(template) for template in templates)) - CREDENTIAL_FIELDS

    def validate(self) -> None:
        """Raise :class:`DefinitionError` when the definition contradicts itself."""
        problems = list(self._problems())
        if problems:
            raise DefinitionError(f"provider {self.name!r}: " + "; ".join(problems))

    def _problems(self):
        if not _NAME.match(self.name):
            yield "name must be lowercase letters, digits, '.', '_' or '-'"
        if self.auth_mode not in AUTH_MODES:
            yield f"auth_mode {self.auth_mode!r} is not one of {', '.join(AUTH_MODES)}"
        for category in self.all_categories:
            if category not in CATEGORIES:
                yield f"unknown category {category!r}"
        unknown = set(self.capabilities) - CAPABILITIES
        if unknown:
            yield f"unknown capabilities {sorted(unknown)}"
        if ("oauth" in self.capabilities) != (self.auth_mode == "oauth2"):
            yield "capability 'oauth' goes with auth_mode 'oauth2' and only with it"
        if ("webhook_receive" in self.capabilities) != self.webhooks:
            yield "capability 'webhook_receive' goes with webhooks=True and only with it"
        if self.auth_mode == "oauth2" and not (self.authorization_url and self.token_url):
            yield "auth_mode 'oauth2' needs authorization_url and token_url"
        if self.auth_mode == "oauth2_cc" and not self.token_url:
            yield "auth_mode 'oauth2_cc' needs token_url"
        params = set(self.connection_params)
        for field in TEMPLATED_URL_FIELDS:
            url = getattr(self, field)
            if url is None:
                continue
            if not url.startswith(("https://", "{", *LOOPBACK_HTTP)):
                yield f"{field} must be an https URL"
            missing = template_fields(url) - params
            if missing:
                yield f"{field} uses {sorted(missing)}, not declared in connection_params"
        for pattern in self.oauth_hosts:
            if not OAUTH_HOST_PATTERN.match(pattern) or "*" in pattern.split(".")[-2:]:
                yield f"oauth_hosts entry {pattern!r} must be a lowercase host name, where '*' may stand for labels but not for the last two"
        unknown_fixed = set(self.fixed_params) - params
        if unknown_fixed:
            yield f"fixed_params names {sorted(unknown_fixed)}, not declared in connection_params"
        for where in (self.credential_headers, self.credential_query):
            for template in where.values():
                missing = template_fields(template) - params - CREDENTIAL_FIELDS
                if missing:
                    yield f"credential template uses unknown fields {sorted(missing)}"
        fields = {"apiKey", "apiSecret", *params}
        for key in ("field_labels", "field_help", "optional_fields"):
            unknown_fields = set(getattr(self, key)) - fields
            if unknown_fields:
                yield f"{key} names {sorted(unknown_fields)}: neither apiKey, apiSecret nor a connection parameter"
        if self.basic_password is not None and self.auth_mode != "basic":
            yield "basic_password goes with auth_mode 'basic' only"
        if self.basic_pair is not None:
            if self.auth_mode != "basic" or self.basic_password is not None:
                yield "basic_pair goes with auth_mode 'basic' only, without basic_password"
            elif not template_fields(self.basic_pair) <= {"username", "password"} or "username" not in template_fields(self.basic_pair):
                yield "basic_pair uses {username} and may use {password}, nothing else"
        urls = set().union(*(template_fields(getattr(self, field) or "") for field in TEMPLATED_URL_FIELDS))
        if set(self.optional_fields) & urls:
            yield f"optional_fields names {sorted(set(self.optional_fields) & urls)}, which a URL needs"
        if self.health_check and not re.match(r"^(GET|POST|HEAD) /", self.health_check):
            yield "health_check must read 'GET /path' (or POST, HEAD)"
