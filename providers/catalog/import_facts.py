"""Import providers from the provider facts: a definition file for each provider that has none yet.

Usage (from the repository root)::

    python providers/catalog/import_facts.py [--facts PATH] [--out DIR] [--dry-run] [--quiet]

The catalog's source of truth is its definition files, ``definitions/<name>.toml``, corrected and
added by hand in pull requests. This script is the one-off importer that wrote most of them: it
reads ``provider-facts.csv`` (see its README; by default ``../shared/data/provider-facts.csv`` next
to the repository), turns every row whose auth mode patchbay supports into a definition in the shape
of :class:`patchbay.Provider`, validates it, and writes it to ``<out>/<name>.toml`` **only when that
file does not exist**: a file a contributor corrected is never overwritten. It prints what it added,
how many providers it left as they are, and every row it cannot turn into a definition, with the
reason. Review what it added against each provider's documentation before committing it.

A new alias of a provider that has a file (``alias_of`` in the facts) takes that provider's
revocation URL and OAuth hosts when it uses the same token endpoint: both were checked by hand for
the provider and the facts record neither.

This script is a development tool: nothing imports it at run time.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import attrs

HERE = Path(__file__).resolve().parent
DEFAULT_FACTS = HERE.parents[1].parent / "shared" / "data" / "provider-facts.csv"
DEFAULT_OUT = HERE / "definitions"

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
            continue  # a literal host, or a parameter in the domain itself: a definition names its hosts in oauth_hosts
        while labels[:2] == ["*", "*"]:
            labels.pop(0)  # a leading '*' already stands for one label or more
        if ".".join(labels) not in patterns:
            patterns.append(".".join(labels))
    return tuple(patterns)


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
    """The definition as a file holds it: required fields, then every field that differs from its
    default."""
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


# ---------------------------------------------------------------------------------------------
# Import
# ---------------------------------------------------------------------------------------------


def _existing(out: Path, name: str) -> dict[str, Any] | None:
    path = out / f"{name}.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def inherit(slug: str, rows: dict[str, dict[str, str]], definition: dict[str, Any], out: Path) -> None:
    """Give an alias the OAuth hosts of the nearest provider of its alias chain that has a file, and
    its revocation URL where both log in with ``oauth2``, when both use the same token endpoint (the
    same OAuth server)."""
    seen = {slug}
    target = rows[slug]["alias_of"]
    while target in rows and target not in seen:
        existing = _existing(out, target)
        if existing is not None:
            if definition.get("token_url") and existing.get("token_url") == definition["token_url"]:
                definition["oauth_hosts"] = tuple(existing.get("oauth_hosts", ()))
                if existing.get("revocation_url") and definition["auth_mode"] == existing.get("auth_mode") == "oauth2":
                    definition["revocation_url"] = existing["revocation_url"]
            return
        seen.add(target)
        target = rows[target]["alias_of"]


@attrs.define
class Result:
    """What one run found."""

    #: name -> definition of each provider that had no file
    added: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    #: the providers that have a file, left as they are
    kept: list[str] = attrs.field(factory=list)
    #: (slug, reason) of the rows that cannot be definitions
    skipped: list[tuple[str, str]] = attrs.field(factory=list)
    #: (slug, what) of the added rows with a part left out
    notes: list[tuple[str, str]] = attrs.field(factory=list)


def import_facts(facts_path: Path, out: Path) -> Result:
    """Map every row of the facts file that has no file in ``out`` yet (nothing is written)."""
    from patchbay import Provider, RetryHeaders

    with facts_path.open(newline="", encoding="utf-8") as handle:
        rows = {row["slug"]: row for row in csv.DictReader(handle)}
    result = Result()
    for slug in sorted(rows):
        if (out / f"{slug}.toml").exists():
            result.kept.append(slug)
            continue
        try:
            notes: list[str] = []
            definition = map_row(resolve_alias(slug, rows), notes)
            inherit(slug, rows, definition, out)
            definition["oauth_hosts"] = tuple(dict.fromkeys((*definition.get("oauth_hosts", ()), *oauth_host_patterns(definition))))
            provider = Provider(**{**definition, "retry_headers": RetryHeaders(**definition["retry_headers"])})
            provider.validate()
        except Skip as reason:
            result.skipped.append((slug, str(reason)))
            continue
        except ValueError as error:
            result.skipped.append((slug, str(error).removeprefix(f"provider {slug!r}: ")))
            continue
        result.added[slug] = serialise(provider)
        result.notes.extend((slug, note) for note in notes)
    return result


def main(argv: list[str] | None = None) -> int:
    from patchbay.providers.catalog.definition_file import render

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=Path, default=DEFAULT_FACTS, help="the provider facts CSV")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the folder of the definition files")
    parser.add_argument("--dry-run", action="store_true", help="print what would be added, write nothing")
    parser.add_argument("--quiet", action="store_true", help="print only the totals")
    args = parser.parse_args(argv)
    result = import_facts(args.facts, args.out)
    if not args.dry_run:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, definition in result.added.items():
            (args.out / f"{name}.toml").write_text(render(definition), encoding="utf-8")
    verb = "would add" if args.dry_run else "added"
    print(f"{verb} {len(result.added)} providers to {args.out}" + (f": {', '.join(result.added)}" if result.added else ""))
    print(f"left {len(result.kept)} providers that have a file as they are")
    for title, rows in (
        (f"skipped {len(result.skipped)} rows that cannot be definitions", result.skipped),
        (f"{len(result.notes)} added with a part left out", result.notes),
    ):
        print(title + (":" if rows and not args.quiet else ""))
        if not args.quiet:
            width = max((len(slug) for slug, _ in rows), default=0)
            for slug, reason in rows:
                print(f"  {slug:<{width}}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
