"""Settings: every value is an environment variable, a ``patchbay serve`` flag and a key of the TOML
file named by ``PATCHBAY_CONFIG``; a flag beats the environment, which beats the file, which beats
the default (contract section 2).

Top-level settings are ``PATCHBAY_<NAME>`` and a top-level TOML key; a section's settings are
``PATCHBAY_<SECTION>_<NAME>`` and a key of the TOML table ``[<section>]``. The free-form tables
``[providers.<name>]``, ``[federation.<name>]`` and ``[plans.<plan>]`` come only from the file.
Any other table is a plugin's own section (``[stripe]`` of the billing plugin), read the same way
once the plugin has declared it (``register_settings``; see ``core/plugins/registry.py``).

The settings and their sections are pydantic models, and every value, whatever its source, is read
by pydantic (:func:`read_values`): a string of the environment or a flag becomes the field's type
(``yes`` a boolean, ``a, b`` a list), a TOML number may stand for a string, and a boolean is no
number. A bad value is a :class:`SettingsError` naming where it came from.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import os
import tomllib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import limits
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, create_model, field_validator

ENV_PREFIX = "PATCHBAY_"

#: the plans a workspace can be on (``core.workspaces.models.PLANS``)
WORKSPACE_PLANS = ("free", "starter", "professional", "enterprise")

RATE_LIMIT_DEFAULTS = {
    "oidc_token": "20/minute",
    "oidc_authorize": "30/minute",
    "oidc_introspect": "60/minute",
    "oidc_revoke": "20/minute",
    "oidc_userinfo": "60/minute",
    "oidc_register": "5/minute",
    "oidc_login_ip": "30/minute",  # login form posts per client address
    "oidc_login_account": "5/minute",  # login form posts per email address; with the next, delays grow
    "oidc_login_account_hourly": "20/hour",
    "connect_api": "1000/minute",
    "proxy": "6000/minute",  # per connection, calls through the proxy and connection clients
}


class SettingsError(ValueError):
    """A setting has a bad value; the message names the setting and where it came from."""


class Section(BaseModel):
    """A group of settings: each field has a default; an unknown key is an error. Values are read
    as :func:`read_values` says."""

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    @field_validator("*", mode="before")
    @classmethod
    def _as_configured(cls, value: Any, info: ValidationInfo) -> Any:
        return _raw_value(value, cls.model_fields[info.field_name].annotation) if info.field_name else value


def _raw_value(value: Any, kind: Any) -> Any:
    """What a source gives, before pydantic reads it as ``kind``: a string for a list is its
    comma-separated items; ``true`` for a number is refused (pydantic would read it as 1)."""
    members = (
        [member for member in typing.get_args(kind) if member is not type(None)] if typing.get_origin(kind) in (typing.Union, type(int | None)) else [kind]
    )
    if any(typing.get_origin(member) is list for member in members):
        items = value if isinstance(value, list) else str(value).split(",") if value is not None else value
        return [str(item).strip() for item in items if str(item).strip()] if items is not None else None
    if isinstance(value, bool) and int in members and bool not in members:
        raise ValueError("expected a whole number")
    return value


def _rate_limit(value: str) -> str:
    if value != "off":
        limits.parse(value)
    return value


class SmtpSettings(Section):
    host: str | None = None
    port: int = 25
    username: str | None = None
    password: str | None = None
    sender: str = "patchbay@localhost"
    starttls: bool = False
    use_tls: bool = False


class BrandingSettings(Section):
    name: str = "patchbay"
    logo_url: str | None = None
    primary_color: str = "#3b5bdb"
    background_color: str = "#f8f9fa"


class ComplianceSettings(Section):
    privacy_policy_url: str | None = None
    privacy_policy_text: str | None = None
    #: deprecated: the meta pack's ``[meta] app_secret``, which the pack falls back on when unset
    meta_app_secret: str | None = None


class AdminSettings(Section):
    #: the operator's credential for /accounts and server-to-server workspace creation
    #: (``x-api-key`` or ``Authorization: Bearer``); unset: those routes answer 401
    api_key: str | None = None


class WorkspacesSettings(Section):
    #: where invite emails and shareable links point; ``{token}``, ``{workspace_id}``, ``{base_url}``
    invite_url: str = "{base_url}/connect/v1/workspaces/invite/validate/{token}"
    link_url: str = "{base_url}/connect/v1/workspaces/join/link/{workspace_id}?token={token}"
    invite_ttl_hours: int = 168
    #: the plan of a workspace created without one; a self-hosted install has no caps by default
    #: (``enterprise``); an operator who sells plans sets ``free``
    default_plan: str = "enterprise"


class WebhooksSettings(Section):
    """Inbound ingestion and outbound forwarding (docs/webhooks.md)."""

    max_retries: int = 3
    retry_base_ms: int = 1000
    retry_cap_ms: int = 15000
    retry_after_cap_seconds: int = 3600
    long_tail_schedule: list[str] = Field(default_factory=lambda: ["300", "1800", "7200", "18000", "36000"])
    disable_after_minutes: int = 4320
    secret_overlap_hours: int = 24
    attempt_timeout_seconds: int = 15
    ingest_batch_ms: int = 2
    ingest_batch_size: int = 1000
    crm_sync_max_attempts: int = 5


class RetentionSettings(Section):
    """Days each kind of record is kept before the maintenance job purges it (0: forever);
    docs/reliability.md."""

    webhook_event_days: int = 30
    proxy_log_days: int = 30
    execution_days: int = 90
    delivery_attempt_days: int = 30
    workspace_audit_days: int = 365


class OutboundSettings(Section):
    """Caps on calls to tenant-controlled targets (docs/security-outbound.md)."""

    #: a response body longer than this (as received, compressed or not) is refused
    max_response_bytes: int = 10 * 1024 * 1024
    #: a compressed body that inflates beyond this is refused
    max_decompressed_bytes: int = 50 * 1024 * 1024
    #: hops a caller that follows redirects takes at most (each hop is checked again)
    max_redirects: int = 5
    #: the whole of a plain (not streamed) call, connect to last byte
    call_timeout_seconds: int = 30
    #: a proxied stream (download or upload) is cut after this many seconds without a byte
    stream_idle_seconds: int = 60


class IdentitySettings(Section):
    """Limits of the identity provider for clients it does not trust (docs/security-identity-trust.md)."""

    #: the longest access / refresh token lifetime a self-registered (third-party) client may ask for
    max_access_token_ttl: int = 3600
    max_refresh_token_ttl: int = 2592000
    #: how long the connect API remembers that a grant is not revoked (seconds; 0: read every time)
    grant_check_seconds: int = 5
    #: agents the operator vouches for (docs/identity.md, "Agents"): client ids, Client ID Metadata
    #: Document URLs or host names; the consent page marks every other agent "unverified"
    trusted_agents: list[str] = Field(default_factory=list)


class ConnectUiSettings(Section):
    """The hosted connect page (docs/connect-ui.md)."""

    #: how long a connect session's token works when its creator does not say
    session_ttl_minutes: int = 30
    #: the longest lifetime a creator may ask for
    max_session_ttl_minutes: int = 1440


class MetricsSettings(Section):
    """Who may read ``/metrics`` (docs/scaling.md)."""

    #: the main port answers ``/metrics`` only with ``Authorization: Bearer <token>``; unset: 404 there
    token: str | None = None
    #: ``host:port`` of a second listener of ``patchbay serve`` answering only ``/metrics``, with no token
    listen: str | None = None


class McpSettings(Section):
    """The MCP server at ``/mcp`` (docs/agents.md)."""

    #: past this many tools a grant lists ``search_tools`` and ``call_tool`` instead (Cursor reads 40)
    max_listed_tools: int = 40
    #: tool calls per access token (grant), as ``[rate_limits]`` values are written
    tool_calls_per_token: str = "600/minute"
    #: tool calls per connection, whichever token makes them (``off``: none)
    tool_calls_per_connection: str = "1200/minute"
    #: how long a tool call needing approval waits for an approver (seconds)
    approval_timeout_seconds: int = 600
    #: lifetime of the token of ``POST /connect/v1/agent-sessions`` (seconds), and its longest
    agent_session_ttl_seconds: int = 900
    max_agent_session_ttl_seconds: int = 86400


class PluginsSettings(Section):
    """Which installed plugins load (docs/provider-packs.md)."""

    #: entry-point names of plugins not to load
    disable: list[str] = Field(default_factory=list)
    #: plugins whose providers replace same-named providers of other plugins, with their behaviour
    replace: list[str] = Field(default_factory=list)
    #: leave a broken plugin out (reported by /health and the CLI) instead of refusing to start
    skip_broken: bool = False


SECTIONS = {
    "smtp": SmtpSettings,
    "branding": BrandingSettings,
    "compliance": ComplianceSettings,
    "admin": AdminSettings,
    "workspaces": WorkspacesSettings,
    "webhooks": WebhooksSettings,
    "retention": RetentionSettings,
    "outbound": OutboundSettings,
    "identity": IdentitySettings,
    "connect_ui": ConnectUiSettings,
    "plugins": PluginsSettings,
    "metrics": MetricsSettings,
    "mcp": McpSettings,
}
FREE_TABLES = ("providers", "federation", "plans", "rate_limits")
PLUGIN_FIELDS = ("plugin_sections", "plugin_environ")


class Settings(Section):
    data_dir: Path = Path("./patchbay-data")
    database_url: str | None = None
    secret_key: list[str] = Field(default_factory=list)
    #: unset: ``http://{host}:{port}`` of this server, so that ``serve --port`` also moves the URLs
    #: it advertises and the issuer; set it when a proxy or another name stands in front
    base_url: str | None = None
    issuer: str | None = None
    cron_secret: str | None = None
    scheduler: bool = True
    allow_insecure_targets: bool = False
    host: str = "127.0.0.1"
    trusted_proxies: list[str] = Field(default_factory=list)  # networks whose X-Forwarded-For is believed
    port: int = 8080
    workers: int = 16
    #: the event loop of ``patchbay serve`` and ``patchbay worker``: ``uvloop`` (libuv's, less CPU per
    #: request), ``asyncio`` (the standard library's) or ``auto`` (uvloop when it is installed)
    event_loop: typing.Literal["auto", "uvloop", "asyncio"] = "auto"
    log_level: str = "INFO"
    #: largest request body of a caller with a valid API key or access token (bytes); also bounds a
    #: streamed CSV import
    max_body_bytes: int = 64 * 1024 * 1024
    #: largest request body of any other caller (webhook receivers, the identity provider's forms)
    max_unauthenticated_body_bytes: int = 1024 * 1024
    #: Redis for the rate limiter's counters across processes (``redis://host:6379/0``); unset: the
    #: database on PostgreSQL, process memory on SQLite
    redis_url: str | None = None
    plugins: PluginsSettings = Field(default_factory=PluginsSettings)
    smtp: SmtpSettings = Field(default_factory=SmtpSettings)
    branding: BrandingSettings = Field(default_factory=BrandingSettings)
    compliance: ComplianceSettings = Field(default_factory=ComplianceSettings)
    admin: AdminSettings = Field(default_factory=AdminSettings)
    workspaces: WorkspacesSettings = Field(default_factory=WorkspacesSettings)
    webhooks: WebhooksSettings = Field(default_factory=WebhooksSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    outbound: OutboundSettings = Field(default_factory=OutboundSettings)
    identity: IdentitySettings = Field(default_factory=IdentitySettings)
    connect_ui: ConnectUiSettings = Field(default_factory=ConnectUiSettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    federation: dict[str, dict[str, Any]] = Field(default_factory=dict)
    plans: dict[str, dict[str, Any]] = Field(default_factory=dict)
    rate_limits: dict[str, str] = Field(default_factory=lambda: dict(RATE_LIMIT_DEFAULTS))
    #: tables of the settings file that no core setting reads: plugins' own sections (a plugin
    #: declares its section with ``register_settings``), checked and structured by the registry
    plugin_sections: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: the ``PATCHBAY_*`` environment variables, which fill plugin sections (``PATCHBAY_<SECTION>_<KEY>``)
    plugin_environ: dict[str, str] = Field(default_factory=dict, repr=False)

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite+aiosqlite:///{self.data_dir.resolve() / 'patchbay.db'}"

    @property
    def resolved_issuer(self) -> str:
        return (self.issuer or self.public_base_url).rstrip("/")

    @property
    def public_base_url(self) -> str:
        if self.base_url:
            return self.base_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"


def field_names(cls: type) -> list[str]:
    """The fields of a settings class: a pydantic model, a dataclass or an attrs class."""
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return list(cls.model_fields)
    if dataclasses.is_dataclass(cls):
        return [field.name for field in dataclasses.fields(cls)]
    if attrs.has(cls):
        return [field.name for field in attrs.fields(cls)]
    raise TypeError(f"{cls!r} is not a settings class (a pydantic model, a dataclass or an attrs class)")


@functools.cache
def _reader(cls: type) -> type[Section]:
    """A :class:`Section` with ``cls``'s fields and types, which reads the raw values of any
    settings class (a plugin's attrs class or dataclass too) the way core sections are read."""
    if isinstance(cls, type) and issubclass(cls, Section):
        return cls
    hints = typing.get_type_hints(cls)
    return create_model(f"{cls.__name__}Reader", __base__=Section, **{name: (hints[name], None) for name in field_names(cls)})  # type: ignore[call-overload]


def read_values(cls: type, raw: Mapping[str, Any], sources: Mapping[str, str]) -> dict[str, Any]:
    """``raw`` (by field of ``cls``) read by pydantic as the fields' types; a bad value is a
    :class:`SettingsError` naming its source (``sources``: the variable, flag or table key)."""
    try:
        read = _reader(cls).model_validate(dict(raw))
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        name = str(first["loc"][0]) if first["loc"] else ""
        reason = first["msg"].removeprefix("Value error, ")
        raise SettingsError(f"{sources.get(name, name)}: {raw.get(name)!r} is not valid ({reason[:1].lower() + reason[1:]})") from None
    return {name: getattr(read, name) for name in raw}


def load_settings(flags: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Load and validate settings; raise :class:`SettingsError` with a clear message."""
    environ = os.environ if environ is None else environ
    flags = {key: value for key, value in (flags or {}).items() if value is not None}
    file_values: dict[str, Any] = {}
    config_path = flags.pop("config", None) or environ.get(f"{ENV_PREFIX}CONFIG")
    if config_path:
        try:
            file_values = tomllib.loads(Path(config_path).read_text())
        except OSError as error:
            raise SettingsError(f"PATCHBAY_CONFIG: cannot read {config_path}: {error.strerror}") from None
        except tomllib.TOMLDecodeError as error:
            raise SettingsError(f"PATCHBAY_CONFIG: {config_path} is not valid TOML: {error}") from None

    top_types = [name for name in Settings.model_fields if name not in PLUGIN_FIELDS]
    plugin_sections = {name: table for name, table in file_values.items() if name not in top_types and isinstance(table, dict)}
    unknown = set(file_values) - set(top_types) - set(plugin_sections)
    if unknown:
        raise SettingsError(f"PATCHBAY_CONFIG: unknown setting(s) {', '.join(sorted(unknown))}")

    values: dict[str, Any] = {}
    raw: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name in top_types:
        if name in SECTIONS:
            values[name] = load_section(name, SECTIONS[name], file_values.get(name, {}), environ)
            continue
        if name in FREE_TABLES:
            table = file_values.get(name, {})
            if not isinstance(table, dict):
                raise SettingsError(f"[{name}] must be a table")
            values[name] = table
            continue
        env_name = f"{ENV_PREFIX}{name.upper()}"
        for source, value in (
            (f"--{name.replace('_', '-')}", flags.get(name)),
            (env_name, environ.get(env_name)),
            (f"{name} (config file)", file_values.get(name)),
        ):
            if value is not None:
                raw[name], sources[name] = value, source
                break
    values.update(read_values(Settings, raw, sources))

    rate_limits = dict(RATE_LIMIT_DEFAULTS)
    for key, value in values.pop("rate_limits").items():
        if key not in RATE_LIMIT_DEFAULTS:
            raise SettingsError(f"[rate_limits]: unknown limit {key!r}; known: {', '.join(RATE_LIMIT_DEFAULTS)}")
        try:
            rate_limits[key] = _rate_limit(str(value))
        except ValueError:
            raise SettingsError(f"[rate_limits] {key}: {value!r} is not 'N/second|minute|hour' or 'off'") from None
    plugin_environ = {key: value for key, value in environ.items() if key.startswith(ENV_PREFIX)}
    settings = Settings(**values, rate_limits=rate_limits, plugin_sections=plugin_sections, plugin_environ=plugin_environ)
    _validate(settings)
    return settings


def load_section(section: str, cls: type, table: Any, environ: Mapping[str, str]) -> Any:
    """``cls`` (a pydantic model, a dataclass or an attrs class whose fields have defaults) from the
    ``[section]`` table, each field overridden by ``PATCHBAY_<SECTION>_<FIELD>``, every value read
    by pydantic (:func:`read_values`); an unknown key or a bad value is a :class:`SettingsError`
    naming it. Core sections and plugins' own sections load alike."""
    if not isinstance(table, dict):
        raise SettingsError(f"[{section}] must be a table")
    names = field_names(cls)
    unknown = set(table) - set(names)
    if unknown:
        raise SettingsError(f"[{section}]: unknown key(s) {', '.join(sorted(unknown))}")
    raw, sources = {}, {}
    for name in names:
        env_name = f"{ENV_PREFIX}{section.upper()}_{name.upper()}"
        if env_name in environ:
            raw[name], sources[name] = environ[env_name], env_name
        elif name in table:
            raw[name], sources[name] = table[name], f"[{section}] {name}"
    return cls(**read_values(cls, raw, sources))


def listen_address(value: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:9100`` for IPv6) as ``(host, port)``; :class:`SettingsError` otherwise."""
    host, _, port = value.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingsError(f"PATCHBAY_METRICS_LISTEN: {value!r} is not host:port")
    return host, int(port)


def _validate(settings: Settings) -> None:
    for name in ("base_url", "issuer"):
        url = getattr(settings, name)
        if url is not None and not url.startswith(("http://", "https://")):
            raise SettingsError(f"PATCHBAY_{name.upper()}: {url!r} must start with http:// or https://")
    url = settings.resolved_database_url
    if not url.startswith(("sqlite+aiosqlite://", "postgresql+asyncpg://")):
        raise SettingsError(f"PATCHBAY_DATABASE_URL: {url!r} must start with sqlite+aiosqlite:// or postgresql+asyncpg://")
    for network in settings.trusted_proxies:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise SettingsError(f"PATCHBAY_TRUSTED_PROXIES: {network!r} is not an address or network") from None
    if not 0 < settings.port < 65536:
        raise SettingsError(f"PATCHBAY_PORT: {settings.port} is not a TCP port")
    for name in ("max_access_token_ttl", "max_refresh_token_ttl"):
        if getattr(settings.identity, name) <= 0:
            raise SettingsError(f"PATCHBAY_IDENTITY_{name.upper()}: must be a positive number of seconds")
    if settings.identity.grant_check_seconds < 0:
        raise SettingsError("PATCHBAY_IDENTITY_GRANT_CHECK_SECONDS: must be 0 or more")
    if settings.workspaces.default_plan not in WORKSPACE_PLANS:
        raise SettingsError(f"PATCHBAY_WORKSPACES_DEFAULT_PLAN: {settings.workspaces.default_plan!r} is not one of {', '.join(WORKSPACE_PLANS)}")
    if settings.metrics.listen is not None:
        listen_address(settings.metrics.listen)
    if settings.workers < 0:
        raise SettingsError("PATCHBAY_WORKERS: must be 0 or more")
    if settings.log_level.upper() not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
        raise SettingsError(f"PATCHBAY_LOG_LEVEL: {settings.log_level!r} is not DEBUG, INFO, WARNING or ERROR")
