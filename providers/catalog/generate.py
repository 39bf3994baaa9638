"""Generate the catalog's provider definitions from the provider facts file.

Usage (from the repository root)::

    python providers/catalog/generate.py [--facts PATH] [--out DIR]

Reads ``provider-facts.csv`` (see its README; by default ``../shared/data/provider-facts.csv`` next to
the repository), turns every row whose auth mode patchbay supports into one declarative definition in
the shape of :class:`patchbay.Provider`, validates it, and writes ``data/<category>.json`` (one list
per primary category, sorted by name). It prints a summary: counts, and every row it skipped with the
reason. The output is deterministic, committed, and reviewed like code; the facts file is input only
and never read at run time.

This script is a development tool: nothing imports it at run time.

To correct a provider, add an entry to ``CORRECTIONS`` (definition fields that replace the mapped
ones, with the reason and the documentation it was checked against) and re-run the script.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import attrs

HERE = Path(__file__).resolve().parent
DEFAULT_FACTS = HERE.parents[1].parent / "shared" / "data" / "provider-facts.csv"
DEFAULT_OUT = HERE / "data"

# ---------------------------------------------------------------------------------------------
# Vocabulary of the facts file
# ---------------------------------------------------------------------------------------------

AUTH_MODES = {"API_KEY": "api_key", "BASIC": "basic", "OAUTH2": "oauth2", "OAUTH2_CC": "oauth2_cc"}

#: Facts labels that are tags, not categories.
TAGS = {"popular", "mcp"}

#: The primary category is the first of a provider's categories in this order: the most specific
#: business domain wins over the broad ones (a CRM that also does marketing is a CRM; a tool tagged
#: "productivity" and anything else is the other thing).
PRIMARY_ORDER = (
    "ads",
    "crm",
    "ats",
    "hr",
    "accounting",
    "invoicing",
    "banking",
    "payment",
    "erp",
    "e-commerce",
    "legal",
    "support",
    "marketing",
    "surveys",
    "cms",
    "storage",
    "knowledge-base",
    "design",
    "video",
    "communication",
    "social",
    "iam",
    "analytics",
    "search",
    "gaming",
    "sports",
    "dev-tools",
    "productivity",
    "ticketing",
    "other",
)

#: Facts fields that describe how a credential is obtained and injected: an alias row with an auth
#: mode of its own does not inherit these from the provider it aliases.
AUTH_FIELDS = (
    "authorization_url",
    "token_url",
    "default_scopes",
    "scope_separator",
    "pkce",
    "token_request_auth_method",
    "credential_headers",
    "credential_query",
)

#: Facts placeholders of credential fields -> the definition's credential fields.
CREDENTIALS = {
    "apiKey": "api_key",
    "credentials.apiKey": "api_key",
    "accessToken": "access_token",
    "username": "username",
    "credentials.username": "username",
    "password": "password",
    "credentials.password": "password",
}

#: The facts' user agents name the catalog they came from; ours name us.
USER_AGENT_DEFAULTS = {"App (support@nango.dev)": "patchbay", "Nango (https://nango.dev)": "patchbay"}

# ---------------------------------------------------------------------------------------------
# Corrections: rows checked against the provider's own documentation
# ---------------------------------------------------------------------------------------------

FACEBOOK_SCOPES = ("leads_retrieval", "pages_show_list", "pages_manage_metadata", "pages_read_engagement", "ads_management")

#: slug -> ({facts column: corrected value}, why). Applied to the facts before the mapping, for rows
#: whose facts are wrong or written in a form the mapping cannot read.
FACT_FIXES: dict[str, tuple[dict[str, str], str]] = {
    "aws": (
        {"api_base_url": "https://cognito-${connectionConfig.apiSubdomain}.amazonaws.com"},
        "apiSubdomain is a connection parameter (the row lists it) but the URL lacks its prefix",
    ),
    "zendesk-api-key": (
        {"credential_headers": ""},
        "Zendesk API tokens are HTTP Basic with '{email}/token' as the user name "
        "(developer.zendesk.com, API token authentication): the connection's username is 'you@x.com/token'",
    ),
    "certn-partner": (
        {"auth_mode": "API_KEY"},
        "the row sends 'Bearer ${apiKey}' and has no token URL: an API key, not client credentials (docs.certn.co, authentication)",
    ),
}

#: The facts record no revocation endpoints. These RFC 7009 endpoints (POST token=..., client
#: authenticated like at the token endpoint) were checked against each provider's documentation;
#: each applies to the provider and to every alias of it with the same auth mode and token URL.
REVOCATION_URLS: dict[str, str] = {
    "google": "https://oauth2.googleapis.com/revoke",  # developers.google.com, OAuth 2.0 for web server apps
    "salesforce": "https://{hostname}/services/oauth2/revoke",  # help.salesforce.com, revoke OAuth tokens
    "salesforce-sandbox": "https://{hostname}/services/oauth2/revoke",
    "zoom": "https://zoom.us/oauth/revoke",  # developers.zoom.us, revoking an access token
    "xero": "https://identity.xero.com/connect/revocation",  # developer.xero.com, revoking tokens
    "twitter-v2": "https://api.twitter.com/2/oauth2/revoke",  # docs.x.com, OAuth 2.0 revoke
    "okta": "https://{subdomain}.okta.com/oauth2/v1/revoke",  # developer.okta.com, /revoke
    "box": "https://api.box.com/oauth2/revoke",  # developer.box.com, revoke access token
    "discord": "https://discord.com/api/oauth2/token/revoke",  # discord.com/developers, OAuth2
    "linkedin": "https://www.linkedin.com/oauth/v2/revoke",  # learn.microsoft.com/linkedin, token revocation
    "reddit": "https://www.reddit.com/api/v1/revoke_token",  # github.com/reddit-archive/reddit/wiki/OAuth2
}

ZOHO_ACCOUNTS = tuple(f"accounts.zoho.{tld}" for tld in ("com", "eu", "in", "com.au", "jp", "ca", "com.cn", "sa", "uk"))
SALESFORCE_HOSTS = ("login.salesforce.com", "test.salesforce.com", "*.my.salesforce.com")
SELLER_CENTRAL = tuple(
    f"sellercentral.amazon.{tld}"
    for tld in (
        "com",
        "ca",
        "com.mx",
        "com.br",
        "co.uk",
        "de",
        "fr",
        "it",
        "es",
        "nl",
        "se",
        "pl",
        "com.tr",
        "com.be",
        "eg",
        "ae",
        "sa",
        "in",
        "co.jp",
        "com.au",
        "sg",
    )
) + ("sellercentral-europe.amazon.com",)

#: The hosts a provider's OAuth URLs reach through a whole-host or top-level-domain parameter
#: (``https://{hostname}/oauth/token``, ``accounts.zoho.{extension}``): the deployment's OAuth app
#: goes to these only (``oauth_hosts`` patterns). Taken from each provider's documentation of its
#: regions or customer domains; a provider left out (self-hosted products, unknown domains) needs
#: the workspace's own OAuth app or the operator's ``[providers.<name>] oauth_hosts`` for such a host.
#: A parameter that is only the first labels of a literal domain (``{subdomain}.zendesk.com``)
#: needs no entry: ``oauth_host_patterns`` derives ``*.zendesk.com``.
OAUTH_HOSTS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("salesforce", "salesforce-cc", "salesforce-sandbox"), SALESFORCE_HOSTS),  # help.salesforce.com, My Domain URL formats
    **dict.fromkeys(
        (
            "zoho",
            "zoho-bigin",
            "zoho-books",
            "zoho-calendar",
            "zoho-crm",
            "zoho-desk",
            "zoho-inventory",
            "zoho-invoice",
            "zoho-mail",
            "zoho-people",
            "zoho-recruit",
        ),
        ZOHO_ACCOUNTS,
    ),  # zoho.com/accounts/protocol/oauth/multi-dc.html
    **dict.fromkeys(("amazon-selling-partner", "amazon-selling-partner-beta"), SELLER_CENTRAL),  # developer-docs.amazon.com/sp-api, Seller Central URLs
    **dict.fromkeys(("ninjaone-rmm", "ninjaone-rmm-oauth2"), ("*.ninjarmm.com",)),  # app., eu., oc., ca., us2.ninjarmm.com
    **dict.fromkeys(("servicenow", "servicenow-oauth2-cc"), ("*.service-now.com",)),  # the facts' fallback: {subdomain}.service-now.com
    **dict.fromkeys(("pingone", "pingone-cc"), tuple(f"auth.pingone.{tld}" for tld in ("com", "eu", "asia", "ca", "com.au"))),  # PingOne regions
    "clio": ("*.clio.com",),  # app.clio.com, eu.app.clio.com, au.app.clio.com, ca.app.clio.com
    "exact-online": tuple(f"start.exactonline.{tld}" for tld in ("nl", "be", "de", "co.uk", "com", "fr", "es")),
    "amazon": ("api.amazon.com", "api.amazon.co.uk", "api.amazon.co.jp"),  # Login with Amazon token endpoints by region
    "battlenet": ("oauth.battle.net",),
    "snowflake": ("*.snowflakecomputing.com",),
    "freshworks": ("*.myfreshworks.com",),
    "datadog-oauth": ("*.datadoghq.com", "*.datadoghq.eu", "*.ddog-gov.com"),  # Datadog sites
    "looker-oauth": ("*.looker.com", "*.looker.app"),
    "revolut-business": ("*.revolut.com",),  # business.revolut.com, b2b.revolut.com and their sandboxes
    "clover": ("*.clover.com",),  # www., api., eu., la. and sandbox.dev.clover.com
    "mercury": ("*.mercury.com",),
    "databricks-workspace": ("*.cloud.databricks.com", "*.azuredatabricks.net", "*.gcp.databricks.com"),
    "smartsheet": ("*.smartsheet.com", "*.smartsheet.eu", "*.smartsheetgov.com"),
    "intercom": ("*.intercom.com", "*.intercom.io"),  # developers.intercom.com, regional hosting
    "canvas-lms": ("*.instructure.com",),  # Canvas cloud; a self-hosted Canvas is the operator's to add
    "auth0-cc": ("*.auth0.com",),
    "adobe-workfront": ("*.my.workfront.com",),
    "crowdstrike": ("*.crowdstrike.com",),  # api., api.us-2., api.eu-1., api.laggar.gcw.crowdstrike.com
    "marketo": ("*.mktorest.com",),  # <munchkin id>.mktorest.com/identity
    "halo-psa": ("*.halopsa.com",),
    "conductorone": ("*.conductor.one",),
    "workday-oauth": ("*.workday.com",),
}


def oauth_host_patterns(definition: dict[str, Any]) -> tuple[str, ...]:
    """The pattern of each OAuth URL whose host has parameters in labels before a literal domain of
    two labels or more: each such label becomes ``*`` (``{subdomain}.zendesk.com``: ``*.zendesk.com``;
    ``{subdomain}.authentication.{region}.hana.ondemand.com``: ``*.authentication.*.hana.ondemand.com``,
    not the whole ``hana.ondemand.com``, where customers run their own applications)."""
    patterns: list[str] = []
    for field in ("authorization_url", "token_url", "revocation_url"):
        host = (definition.get(field) or "").removeprefix("https://").split("/", 1)[0]
        labels = ["*" if "{" in label else label for label in host.split(".")]
        if "*" not in labels or "*" in labels[-2:]:
            continue  # a literal host, or a parameter in the domain itself: OAUTH_HOSTS names them
        while labels[:2] == ["*", "*"]:
            labels.pop(0)  # a leading '*' already stands for one label or more
        if ".".join(labels) not in patterns:
            patterns.append(".".join(labels))
    return tuple(patterns)


#: slug -> (definition fields that replace the mapped ones, why). Applied after the mapping and
#: before validation, so a correction is checked like any other definition.
CORRECTIONS: dict[str, tuple[dict[str, Any], str]] = {
    "facebook": (
        {
            "display_name": "Meta Lead Ads",
            "category": "ads",
            "categories": ("marketing", "social"),
            "scopes": FACEBOOK_SCOPES,
            "webhooks": True,
            "capabilities": ("oauth", "proxy", "webhook_receive", "lead_sync"),
            # Graph API tokens have no refresh grant: a long-lived token is obtained by exchanging it
            # (grant_type=fb_exchange_token), which a hook implements, not the standard refresh.
            "refreshes": False,
            "health_check": "GET /me",
            "docs_url": "https://developers.facebook.com/docs/marketing-api/guides/lead-ads/",
        },
        "patchbay's Meta Lead Ads provider: Lead Ads needs leads_retrieval and the page scopes, and "
        "leadgen events arrive as page webhooks (developers.facebook.com, Lead Ads guide)",
    ),
    "intercom": (
        {
            "authorization_url": "https://app.{app_host}/oauth",
            "token_url": "https://{api_host}/auth/eagle/token",
            "api_base_url": "https://{api_host}",
            "connection_params": ("app_host", "api_host"),
            "connection_param_defaults": {"app_host": "intercom.com", "api_host": "api.intercom.io"},
        },
        "the facts' region fallback ('app.{region}.intercom.com' || 'app.intercom.com') has no value "
        "for the US region; Intercom's regional hosts are api.intercom.io, api.eu.intercom.io and "
        "api.au.intercom.io (developers.intercom.com, regional hosting)",
    ),
    "twitter-v2": ({"pkce": True}, "X requires PKCE for OAuth 2.0 (docs.x.com, OAuth 2.0 Authorization Code Flow with PKCE)"),
    "zoom": (
        {"token_auth_method": "client_secret_basic"},
        "Zoom's token endpoint takes the client in an 'Authorization: Basic' header (developers.zoom.us, OAuth 2.0)",
    ),
    "twilio": (
        {"health_check": "GET /2010-04-01/Accounts.json"},
        "the facts' check needs the account SID in its path; listing accounts proves the same credential (twilio.com/docs, Accounts resource)",
    ),
    "notion": ({"refreshes": False}, "Notion access tokens do not expire and have no refresh token (developers.notion.com, authorization)"),
    "github": (
        {"category": "dev-tools", "categories": ("support", "ticketing"), "health_check": "GET /user"},
        "GitHub is a developer platform; GET /user returns the authenticated user (docs.github.com, REST users)",
    ),
    "slack": (
        {"category": "communication", "categories": ("productivity",)},
        "Slack is a messaging product; the facts list it under productivity only",
    ),
    "hubspot": (
        {"scopes": ("oauth",), "health_check": "GET /account-info/v3/details"},
        "HubSpot apps must request at least the 'oauth' scope (developers.hubspot.com, OAuth quickstart)",
    ),
    "linkedin": (
        {"category": "social", "categories": ("ats",)},
        "LinkedIn's API is first a social network API; ats is secondary",
    ),
    "discord": (
        {"category": "communication", "categories": ("gaming", "social")},
        "Discord is a messaging platform",
    ),
    "microsoft-teams": (
        {"category": "communication", "categories": ("productivity", "video")},
        "Teams is a messaging and meeting product",
    ),
    "meta-marketing-api": (
        {"category": "ads", "categories": ("marketing",)},
        "the Marketing API is Meta's ads management API (developers.facebook.com, Marketing API)",
    ),
    "google": (
        {"category": "productivity", "categories": ("communication", "dev-tools", "social")},
        "the generic Google provider is used mostly for Workspace APIs",
    ),
    "microsoft": (
        {"category": "productivity", "categories": ("communication", "dev-tools")},
        "the generic Microsoft provider is used mostly for Microsoft 365 (Graph) APIs",
    ),
}

# ---------------------------------------------------------------------------------------------
# Mapping
# ---------------------------------------------------------------------------------------------


class Skip(Exception):
    """A row that cannot be made into a valid definition; the message is the reason."""


_PLACEHOLDER = re.compile(r"\$\{([^{}]*)\}")
_BASE64 = re.compile(r"\$\{base64\(\$\{(?:credentials\.)?username\}:\$\{(?:credentials\.)?password\}\)\}")


def param_name(name: str) -> str:
    """A facts parameter name as a template field name: an identifier, since ``str.format`` reads
    ``{a.b}`` as an attribute lookup (``installation.apiEndPoint`` -> ``installation_apiEndPoint``)."""
    return re.sub(r"\W", "_", name.removeprefix("connectionConfig."))


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def translate(value: str, *, credentials: bool) -> str:
    """A facts template as a definition template: ``${connectionConfig.x}`` -> ``{x}`` and, where
    ``credentials`` is allowed, ``${apiKey}`` -> ``{api_key}`` and so on. Anything else (signatures,
    timestamps, the deployment's client id) cannot be expressed as data: :class:`Skip`."""
    if credentials:
        value = _BASE64.sub("${basic}", value)
        value = USER_AGENT_DEFAULTS.get(value, value)
    computed = re.search(r"\$\{(?![A-Za-z0-9_.-]+\})[^}]*\}?", value)
    if computed:
        raise Skip(f"computed value {computed.group(0)!r} cannot be expressed in a definition")
    out, position = [], 0
    for match in _PLACEHOLDER.finditer(value):
        out.append(_escape(value[position : match.start()]))
        name = match.group(1)
        if name.startswith("connectionConfig."):
            out.append("{" + param_name(name) + "}")
        elif credentials and name in CREDENTIALS:
            out.append("{" + CREDENTIALS[name] + "}")
        elif credentials and name == "basic":
            out.append("{basic}")
        else:
            raise Skip(f"placeholder ${{{name}}} cannot be expressed in a definition")
        position = match.end()
    out.append(_escape(value[position:]))
    return "".join(out)


def _fields(template: str) -> list[str]:
    return re.findall(r"(?<!\{)\{([^{}]+)\}(?!\})", template)


def resolve_fallback(value: str, *, credentials: bool) -> tuple[str, dict[str, str], set[str]]:
    """``"a || b"``: b is what a becomes when its parameters are missing. Answer the template a and
    the parameter defaults that turn a into b, plus the parameters only b used (no longer needed).
    When no default turns a into b, b is dropped and a's parameters are required."""
    if "||" not in value:
        return translate(value, credentials=credentials), {}, set()
    first, second = (part.strip() for part in value.split("||", 1))
    template = translate(first, credentials=credentials)
    # Match a against b with each of a's parameters as a group; b's own placeholders are text here.
    names, pattern, position = [], [], 0
    for match in _PLACEHOLDER.finditer(first):
        pattern.append(re.escape(first[position : match.start()]))
        if match.group(1).startswith("connectionConfig."):
            names.append(param_name(match.group(1)))
            pattern.append("(.+?)")
        else:
            pattern.append(re.escape(match.group(0)))
        position = match.end()
    pattern.append(re.escape(first[position:]))
    found = re.fullmatch("".join(pattern), second)
    if found:
        defaults = {}
        for name, captured in zip(names, found.groups(), strict=True):
            if captured.startswith("${") and param_name(captured[2:-1]) == name:
                continue  # the same parameter on both sides
            if "${" in captured:
                break
            defaults[name] = USER_AGENT_DEFAULTS.get(captured, captured)
        else:
            return template, defaults, set()
    only_b = {param_name(name) for name in _PLACEHOLDER.findall(second)} - set(names)
    return template, {}, only_b


def _split_scopes(text: str) -> tuple[str, ...]:
    return tuple(part for part in re.split(r"[\s,]+", text) if part)


def _categories(row: dict[str, str]) -> tuple[str, tuple[str, ...]]:
    labels = [label for label in row["categories"].split() if label not in TAGS]
    name = row["display_name"]
    if re.search(r"(^|-)ads($|-)", row["slug"]) or re.search(r"\bAds\b", name):
        labels.append("ads")
    labels = sorted(set(labels)) or ["other"]
    primary = min(labels, key=lambda label: PRIMARY_ORDER.index(label) if label in PRIMARY_ORDER else len(PRIMARY_ORDER))
    return primary, tuple(label for label in labels if label != primary)


def resolve_alias(slug: str, rows: dict[str, dict[str, str]], seen: tuple[str, ...] = ()) -> dict[str, str]:
    """The row's facts with an alias resolved: the target's facts, overridden by what the alias row
    itself says. An alias with an auth mode of its own keeps none of the target's auth facts."""
    row = rows[slug]
    target_slug = row["alias_of"]
    if not target_slug:
        return dict(row)
    if target_slug in seen or target_slug not in rows:
        raise Skip(f"alias_of {target_slug!r} does not resolve")
    target = resolve_alias(target_slug, rows, (*seen, slug))
    own = {key: value for key, value in row.items() if value}
    merged = dict(target)
    if own.get("auth_mode") and own["auth_mode"] != target["auth_mode"]:
        for field in AUTH_FIELDS:
            merged[field] = ""
    merged.update(own)
    merged["categories"] = row["categories"]
    merged["display_name"] = row["display_name"]
    merged["has_webhooks"] = row["has_webhooks"] or target["has_webhooks"]
    return merged


def _family(slug: str, rows: dict[str, dict[str, str]]) -> str:
    """The first slug of the alias chain that has a revocation URL, else the slug itself."""
    seen = set()
    while slug not in REVOCATION_URLS and rows[slug]["alias_of"] and slug not in seen:
        seen.add(slug)
        slug = rows[slug]["alias_of"] if rows[slug]["alias_of"] in rows else slug
    return slug


def _json_object(text: str, field: str) -> dict[str, str]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise Skip(f"{field} is not JSON") from None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise Skip(f"{field} is not an object of strings")
    return value


def map_row(facts: dict[str, str], notes: list[str] | None = None) -> dict[str, Any]:
    """One definition (the keyword arguments of :class:`patchbay.Provider`) from resolved facts;
    what was left out on the way is appended to ``notes``."""
    notes = [] if notes is None else notes
    mode = AUTH_MODES.get(facts["auth_mode"])
    if mode is None:
        raise Skip(f"auth mode {facts['auth_mode'] or '(none)'} is not supported")
    definition: dict[str, Any] = {"name": facts["slug"], "display_name": facts["display_name"]}
    definition["category"], definition["categories"] = _categories(facts)
    definition["auth_mode"] = mode
    defaults: dict[str, str] = {}
    unused: set[str] = set()

    def url(field: str) -> str | None:
        if not facts[field]:
            return None
        if facts[field].lstrip().startswith("{"):
            raise Skip(f"{field} depends on the auth mode")
        template, found, only_b = resolve_fallback(facts[field], credentials=False)
        defaults.update(found)
        unused.update(only_b)
        return template

    definition["api_base_url"] = url("api_base_url")
    if not definition["api_base_url"]:
        raise Skip("no API base URL")
    if mode == "oauth2":
        definition["authorization_url"] = url("authorization_url")
    if mode in ("oauth2", "oauth2_cc"):
        definition["token_url"] = url("token_url")
        separator = facts["scope_separator"] or " "
        definition["scopes"] = _split_scopes(facts["default_scopes"])
        definition["scope_separator"] = separator
        definition["pkce"] = mode == "oauth2" and facts["pkce"] != "no"
        if facts["token_request_auth_method"] == "basic":
            definition["token_auth_method"] = "client_secret_basic"
        elif facts["token_request_auth_method"]:
            raise Skip(f"token request auth method {facts['token_request_auth_method']!r} is not supported")

    headers, query = {}, {}
    for source, target in (
        (_json_object(facts["credential_headers"], "credential_headers"), headers),
        (_json_object(facts["credential_query"], "credential_query"), query),
    ):
        for key, value in source.items():
            template, found, only_b = resolve_fallback(value, credentials=True)
            defaults.update(found)
            unused.update(only_b)
            target[key.lower() if source is not query else key] = template
    carried = {field for template in (*headers.values(), *query.values()) for field in _fields(template)}
    if mode == "api_key" and "api_key" not in carried:
        raise Skip("no credential injection for the API key")
    if mode == "basic" and not carried & {"basic", "username", "password"}:
        headers["authorization"] = "Basic {basic}"
    if mode in ("oauth2", "oauth2_cc") and "access_token" not in carried and "authorization" not in headers:
        headers["authorization"] = "Bearer {access_token}"
    definition["credential_headers"] = headers
    definition["credential_query"] = query

    if facts["health_check"]:
        method, _, path = facts["health_check"].partition(" ")
        if "${" in path:
            # a health check is a fixed request; one that needs a credential or a parameter in
            # its path (and so in the audit log) is left out rather than sent unfilled
            notes.append("health check with a placeholder left out")
        else:
            definition["health_check"] = f"{method} {path if path.startswith('/') else '/' + path}"

    retry = {
        "retry_after": facts["retry_after_header"].lower() or None,
        "reset_at": facts["rate_limit_reset_header"].lower() or None,
        "remaining": facts["rate_limit_remaining_header"].lower() or None,
    }
    definition["retry_headers"] = {key: value for key, value in retry.items() if value}

    used: list[str] = []
    for field in ("api_base_url", "authorization_url", "token_url"):
        used += _fields(definition.get(field) or "")
    for template in (*headers.values(), *query.values()):
        used += [f for f in _fields(template) if f not in CREDENTIALS.values() and f != "basic"]
    listed = [param_name(name) for name in facts["connection_params"].split()]
    params = [p for p in listed if p not in unused or p in used]
    if mode == "oauth2":
        # A parameter no template uses comes from the provider during or after the login (QuickBooks'
        # realmId in the callback, Jira's site): asking for it before the login would block it.
        idle = [p for p in params if p not in used]
        if idle:
            notes.append(f"connection parameter(s) {', '.join(idle)} used by no template left out")
        params = [p for p in params if p in used]
    params += [p for p in used if p not in params]
    definition["connection_params"] = tuple(dict.fromkeys(params))
    definition["connection_param_defaults"] = dict(sorted(defaults.items()))

    definition["webhooks"] = facts["has_webhooks"] == "yes"
    capabilities = ["oauth"] if mode == "oauth2" else []
    capabilities.append("proxy")
    if definition["webhooks"]:
        capabilities.append("webhook_receive")
    definition["capabilities"] = tuple(capabilities)
    return definition


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def serialise(provider) -> dict[str, Any]:
    """The definition as committed: required fields, then every field that differs from its
    default, in the order of :class:`patchbay.Provider`'s fields."""
    from patchbay import Provider

    out: dict[str, Any] = {}
    for field in attrs.fields(Provider):
        value = getattr(provider, field.name)
        if field.name == "retry_headers":
            plain = {k: v for k, v in attrs.asdict(value).items() if v is not None}
            if plain:
                out[field.name] = plain
            continue
        if isinstance(value, dict) or hasattr(value, "items"):
            value = dict(value)
        if field.default is not attrs.NOTHING:
            default = field.default.factory() if isinstance(field.default, attrs.Factory) else field.default
            if field.converter is not None and not isinstance(field.default, attrs.Factory):
                default = field.converter(default)
            if value == default or (isinstance(default, dict) and value == dict(default)):
                continue
        out[field.name] = _plain(value)
    return out


@attrs.define
class Result:
    """What one run produced."""

    #: primary category -> serialised definitions, sorted by name
    by_category: dict[str, list[dict[str, Any]]] = attrs.field(factory=dict)
    #: (slug, reason) of the rows that are not in the catalog
    skipped: list[tuple[str, str]] = attrs.field(factory=list)
    #: (slug, what) of the rows kept with a part left out
    notes: list[tuple[str, str]] = attrs.field(factory=list)
    #: slugs whose facts or definition were corrected
    corrected: list[str] = attrs.field(factory=list)


def generate(facts_path: Path) -> Result:
    """Map every row of the facts file."""
    from patchbay import Provider, RetryHeaders

    with facts_path.open(newline="", encoding="utf-8") as handle:
        rows = {row["slug"]: row for row in csv.DictReader(handle)}
    by_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
    result = Result()
    skipped, corrected = result.skipped, result.corrected
    for slug in sorted(rows):
        try:
            facts = resolve_alias(slug, rows)
            family = _family(slug, rows)
            if slug in FACT_FIXES:
                facts.update(FACT_FIXES[slug][0])
                corrected.append(slug)
            notes: list[str] = []
            definition = map_row(facts, notes)
            same_server = family == slug or facts["token_url"] == resolve_alias(family, rows)["token_url"]
            if family in REVOCATION_URLS and definition["auth_mode"] == "oauth2" and same_server:
                definition["revocation_url"] = REVOCATION_URLS[family]
            if slug in CORRECTIONS:
                definition.update(CORRECTIONS[slug][0])
                corrected.append(slug)
                if "health_check" in CORRECTIONS[slug][0]:
                    notes = [note for note in notes if not note.startswith("health check")]
            definition["oauth_hosts"] = OAUTH_HOSTS.get(slug, ()) + oauth_host_patterns(definition)
            retry = RetryHeaders(**definition.pop("retry_headers"))
            provider = Provider(**definition, retry_headers=retry)
            provider.validate()
        except Skip as reason:
            skipped.append((slug, str(reason)))
            continue
        except ValueError as error:
            skipped.append((slug, str(error).removeprefix(f"provider {slug!r}: ")))
            continue
        by_category[provider.category].append(serialise(provider))
        result.notes.extend((slug, note) for note in notes)
    result.by_category = dict(sorted(by_category.items()))
    return result


def write(by_category: dict[str, list[dict[str, Any]]], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.json"):
        if stale.stem not in by_category:
            stale.unlink()
    for category, definitions in by_category.items():
        text = json.dumps(definitions, indent=1, ensure_ascii=False) + "\n"
        (out / f"{category}.json").write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=Path, default=DEFAULT_FACTS, help="the provider facts CSV")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the folder of the data files")
    parser.add_argument("--quiet", action="store_true", help="print only the totals")
    args = parser.parse_args(argv)
    result = generate(args.facts)
    by_category = result.by_category
    write(by_category, args.out)
    total = sum(len(items) for items in by_category.values())
    modes = Counter(d["auth_mode"] for items in by_category.values() for d in items)
    print(f"{total} providers in {len(by_category)} categories -> {args.out}")
    print("auth modes: " + ", ".join(f"{mode} {count}" for mode, count in sorted(modes.items())))
    print("categories: " + ", ".join(f"{c} {len(items)}" for c, items in by_category.items()))
    print(f"corrections applied: {', '.join(result.corrected)}")
    for title, rows in (("skipped", result.skipped), ("kept with a part left out", result.notes)):
        print(f"{title}: {len(rows)} rows")
        if not args.quiet:
            width = max((len(slug) for slug, _ in rows), default=0)
            for slug, reason in rows:
                print(f"  {slug:<{width}}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
