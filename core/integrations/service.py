"""Integrations configured at run time: per provider, the deployment's or a workspace's OAuth app
(client id and secret), scopes, API base URL and webhook secrets, stored encrypted in the database.

Levels, the first that has a value wins:

- the workspace's row (OAuth app, scopes, API base URL), then its BYOA credentials (``/byoa``);
- the deployment's row;
- the settings file's ``[providers.<name>]`` table (the seed: deleting a stored value falls back
  to it), then the provider's definition.

Webhook secrets are the deployment's only: provider webhooks arrive at the deployment's
``/webhook/<provider>`` and are verified before the workspace they belong to is known.

Every process reads stored values on use through :class:`IntegrationsRuntime`: a cache of rows per
(workspace, provider) that is dropped whenever the one-row version counter, which every write
increments in its own transaction, differs from the version the cache was read at. Checking it is
one primary-key read, shared by the calls that need it at the same moment and trusted for
:data:`VERSION_WINDOW_SECONDS` (the proxy asks on every call: a read per call would cost it a
database round trip), so a change made through one process is used by every other within that
window, without a restart; the process that made it uses it on its next call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
from sqlalchemy import select, update
from sqlalchemy.exc import SQLAlchemyError

from patchbay.core.connections.auth import OAuthApp, TemplateError, connection_params, fill_url
from patchbay.core.connections.models import ByoaCredential
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.integrations.models import DEPLOYMENT, IntegrationSetting, IntegrationVersion
from patchbay.core.outbound import UnsafeTarget
from patchbay.core.plugins.provider import Provider, template_fields
from patchbay.core.plugins.registry import ProviderSecrets
from patchbay.core.timeutil import iso

if TYPE_CHECKING:
    from patchbay.core.connections.runtime import ConnectionState
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

#: the body fields, by level
APP_FIELDS = ("clientId", "clientSecret", "scopes")
WORKSPACE_FIELDS = (*APP_FIELDS, "apiBaseUrl")
DEPLOYMENT_FIELDS = (*WORKSPACE_FIELDS, "webhookSecret", "webhookVerifyToken")
MAX_SCOPES = 200
FINGERPRINT_CHARS = 12
#: how long a read of the version counter is trusted: the longest another process uses a value
#: after it changed
VERSION_WINDOW_SECONDS = 1.0


# ---------------------------------------------------------------------------------------------
# The cache every process keeps, checked against the version counter on use
# ---------------------------------------------------------------------------------------------


@attrs.frozen
class Stored:
    """One level's stored values for a provider, decrypted (None: not set at this level)."""

    client_id: str | None = None
    client_secret: str | None = attrs.field(default=None, repr=False)
    scopes: tuple[str, ...] | None = None
    api_base_url: str | None = None
    webhook_secret: str | None = attrs.field(default=None, repr=False)
    webhook_verify_token: str | None = attrs.field(default=None, repr=False)


NOTHING = Stored()

_VERSION = select(IntegrationVersion.version).where(IntegrationVersion.id == 1)


class IntegrationsRuntime:
    """Stored integration settings as this process last read them, by (scope, provider): the
    deployment's and one workspace's rows in one read; negative answers are kept too."""

    def __init__(self, services: Services, *, limit: int = 20_000, window: float = VERSION_WINDOW_SECONDS) -> None:
        self._services = services
        self._limit = limit
        self.window = window
        self._version: int | None = None
        self._version_read_at = 0.0
        self._levels: dict[tuple[str, str], tuple[Stored, Stored]] = {}
        self._version_read: asyncio.Future[int] | None = None
        #: version reads made (the tests and benchmark count them)
        self.version_reads = 0

    async def _read_version(self) -> int:
        self.version_reads += 1
        async with self._services.db.engine.connect() as connection:
            version = int(await connection.scalar(_VERSION) or 0)
        self._version_read_at = time.monotonic()
        return version

    async def current_version(self) -> int:
        """The version counter as the database had it at most ``window`` seconds ago. Calls that
        arrive while a read is under way share it."""
        if self._version is not None and time.monotonic() - self._version_read_at < self.window:
            return self._version
        pending = self._version_read
        if pending is None:
            pending = self._version_read = asyncio.ensure_future(self._read_version())
            pending.add_done_callback(self._read_done)
        return await asyncio.shield(pending)

    def _read_done(self, pending: asyncio.Future[int]) -> None:
        if self._version_read is pending:
            self._version_read = None

    def forget(self) -> None:
        """Drop what this process knows (after its own write)."""
        self._levels.clear()
        self._version = None
        self._version_read = None

    async def levels(self, workspace_id: str | None, provider: str) -> tuple[Stored, Stored]:
        """(the deployment's, the workspace's) stored values for ``provider``, as of now."""
        key = (workspace_id or DEPLOYMENT, provider)
        try:
            version = await self.current_version()
        except (SQLAlchemyError, OSError):
            # the database is out of reach: what this process last read serves, as the connection
            # cache does, rather than failing every proxied call
            found = self._levels.get(key)
            if found is None:
                raise
            log.warning("integration settings: the version could not be read; using the values read before", exc_info=True)
            return found
        if version != self._version:
            self._levels.clear()
            self._version = version
        found = self._levels.get(key)
        if found is None:
            found = await self._read_levels(workspace_id, provider)
            if self._version == version:  # not changed by a read that ran meanwhile
                if len(self._levels) >= self._limit:
                    self._levels.clear()
                self._levels[key] = found
        return found

    async def _read_levels(self, workspace_id: str | None, provider: str) -> tuple[Stored, Stored]:
        scopes = [DEPLOYMENT] if workspace_id is None else [DEPLOYMENT, workspace_id]
        async with self._services.db.session() as session:
            rows = list(await session.scalars(select(IntegrationSetting).where(IntegrationSetting.provider == provider, IntegrationSetting.scope.in_(scopes))))
        by_scope = {row.scope: _stored(self._services, row) for row in rows}
        return by_scope.get(DEPLOYMENT, NOTHING), (by_scope.get(workspace_id, NOTHING) if workspace_id else NOTHING)


def _stored(services: Services, row: IntegrationSetting) -> Stored:
    decrypt = services.secrets.decrypt
    return Stored(
        client_id=row.client_id,
        client_secret=decrypt(row.client_secret) if row.client_secret else None,
        scopes=tuple(row.scopes) if row.scopes is not None else None,
        api_base_url=row.api_base_url,
        webhook_secret=decrypt(row.webhook_secret) if row.webhook_secret else None,
        webhook_verify_token=decrypt(row.webhook_verify_token) if row.webhook_verify_token else None,
    )


def runtime(services: Services) -> IntegrationsRuntime:
    return services.integrations


def install(services: Services) -> None:
    services.integrations = IntegrationsRuntime(services)


# ---------------------------------------------------------------------------------------------
# What the rest of patchbay asks: the values in effect
# ---------------------------------------------------------------------------------------------


def _file_secrets(services: Services, provider: str) -> ProviderSecrets:
    return services.registry.provider_secrets(provider)


async def deployment_app(services: Services, provider: str) -> OAuthApp | None:
    """The deployment's OAuth app for ``provider``: stored, else the settings file's."""
    deployment, _ = await runtime(services).levels(None, provider)
    if deployment.client_id:
        return OAuthApp(client_id=deployment.client_id, client_secret=deployment.client_secret, source="deployment")
    secrets = _file_secrets(services, provider)
    if secrets.client_id:
        return OAuthApp(client_id=secrets.client_id, client_secret=secrets.client_secret, source="deployment")
    return None


async def workspace_app(services: Services, workspace_id: str, provider: str) -> OAuthApp | None:
    """The OAuth app stored for ``provider`` at the workspace's level (not its BYOA credentials)."""
    _, workspace = await runtime(services).levels(workspace_id, provider)
    if workspace.client_id:
        return OAuthApp(client_id=workspace.client_id, client_secret=workspace.client_secret, source="byoa")
    return None


async def authorize_scopes(services: Services, *, workspace_id: str, provider: Provider, app: OAuthApp | None) -> list[str]:
    """The scopes an authorization asks for when the caller names none: the workspace's stored
    scopes, the scopes saved with its BYOA credentials (when they are the app used), the
    deployment's stored scopes, else the definition's (with the settings file's ``scopes``)."""
    deployment, workspace = await runtime(services).levels(workspace_id, provider.name)
    if workspace.scopes:
        return list(workspace.scopes)
    if app is not None and app.source == "byoa" and not workspace.client_id:
        async with services.db.session(tenant=workspace_id) as session:
            saved = await session.scalar(select(ByoaCredential.scopes).where(ByoaCredential.provider == provider.name))
        if saved:
            return list(saved)
    if deployment.scopes:
        return list(deployment.scopes)
    return list(provider.scopes)


async def override_base_url(services: Services, state: ConnectionState, provider: Provider) -> str | None:
    """The API base URL stored for the connection's workspace or the deployment, filled with the
    connection's parameters and checked against the outbound guard; None when none is stored (the
    definition's applies: the proxy's own per-connection value)."""
    deployment, workspace = await runtime(services).levels(state.workspace_id, provider.name)
    template = workspace.api_base_url or deployment.api_base_url
    if template is None:
        return None
    try:
        url = fill_url(template, provider, connection_params(provider, state.params))
        services.outbound.check(url)
    except (TemplateError, UnsafeTarget) as error:
        raise Invalid(f"Cannot call {provider.display_name}: {error}") from None
    return url.rstrip("/")


async def webhook_secrets(services: Services, provider: str, file: ProviderSecrets) -> ProviderSecrets:
    """``file`` (the settings file's secrets) with the deployment's stored webhook secret and
    verify token in place of its own."""
    deployment, _ = await runtime(services).levels(None, provider)
    if deployment.webhook_secret is None and deployment.webhook_verify_token is None:
        return file
    return attrs.evolve(
        file,
        webhook_secret=deployment.webhook_secret or file.webhook_secret,
        webhook_verify_token=deployment.webhook_verify_token or file.webhook_verify_token,
    )


async def oauth_ready(services: Services, *, workspace_id: str) -> set[str]:
    """The OAuth providers that have an app for ``workspace_id``: stored for it or the deployment,
    its BYOA credentials, or the settings file's."""
    ready = {name for name, secrets in services.registry.secrets.items() if secrets.client_id}
    async with services.db.session() as session:
        stored = await session.scalars(
            select(IntegrationSetting.provider).where(IntegrationSetting.scope.in_([DEPLOYMENT, workspace_id]), IntegrationSetting.client_id.is_not(None))
        )
        ready.update(stored)
    async with services.db.session(tenant=workspace_id) as session:
        ready.update(await session.scalars(select(ByoaCredential.provider)))
    return ready


def can_connect(provider: Provider, ready: set[str]) -> bool:
    """Whether a connection to ``provider`` can be made: any provider that is not OAuth; an OAuth
    one with an app (``ready``: :func:`oauth_ready`)."""
    return provider.auth_mode != "oauth2" or provider.name in ready


# ---------------------------------------------------------------------------------------------
# Reading and writing the stored settings (the API and the console)
# ---------------------------------------------------------------------------------------------


def provider_named(services: Services, name: str) -> Provider:
    provider = services.registry.provider(name)
    if provider is None:
        raise NotFound(f"Provider not found: {name}")
    return provider


def receives_webhooks(services: Services, provider: Provider) -> bool:
    return services.registry.get("webhooks", provider.name) is not None


def _text(name: str, value: Any, *, limit: int) -> str:
    if not isinstance(value, str):
        raise Invalid(f"Validation failed: {name} must be a string")
    value = value.strip()
    if not value:
        raise Invalid(f"Validation failed: {name} must not be empty (null removes it)")
    if len(value) > limit:
        raise Invalid(f"Validation failed: {name} must be at most {limit} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise Invalid(f"Validation failed: {name} must not contain control characters")
    return value


def _scopes(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(scope, str) for scope in value):
        raise Invalid("Validation failed: scopes must be an array of strings")
    if len(value) > MAX_SCOPES:
        raise Invalid(f"Validation failed: scopes must have at most {MAX_SCOPES} entries")
    scopes = []
    for scope in value:
        if not scope or len(scope) > 500 or any(c.isspace() or ord(c) < 32 for c in scope):
            raise Invalid(f"Validation failed: scope {scope[:50]!r} must be 1 to 500 characters without spaces")
        if scope not in scopes:
            scopes.append(scope)
    return scopes


def check_base_url(services: Services, provider: Provider, value: Any) -> str:
    """A base URL the proxy may call: absolute http(s), https unless insecure targets are allowed,
    not naming a private address, its ``{placeholders}`` among the provider's connection parameters."""
    url = _text("apiBaseUrl", value, limit=2000).rstrip("/")
    if url.startswith("{"):
        raise Invalid("Validation failed: apiBaseUrl must start with https://")
    try:
        fields = template_fields(url) if "{" in url or "}" in url else set()
    except ValueError:
        raise Invalid("Validation failed: apiBaseUrl has an unbalanced { or }") from None
    unknown = sorted(fields - set(provider.connection_params))
    if unknown:
        known = ", ".join(provider.connection_params) or "none"
        raise Invalid(f"Validation failed: apiBaseUrl uses {unknown}, not connection parameters of {provider.name} (they are: {known})")
    sample = url
    for field in fields:
        sample = sample.replace("{" + field + "}", "x")
    if "{" in sample or "}" in sample:
        raise Invalid("Validation failed: apiBaseUrl placeholders must name a connection parameter ({subdomain})")
    if "?" in sample or "#" in sample:
        raise Invalid("Validation failed: apiBaseUrl must have no query or fragment")
    try:
        services.outbound.check(sample)
    except UnsafeTarget as error:
        hint = (
            ""
            if services.settings.allow_insecure_targets
            else " (--allow-insecure-targets or PATCHBAY_ALLOW_INSECURE_TARGETS allows http and private addresses)"
        )
        raise Invalid(f"Validation failed: apiBaseUrl {error}{hint}") from None
    return url


def check_fields(body: Mapping[str, Any]) -> None:
    """400 naming the fields ``body`` has that no level knows."""
    unknown = sorted(set(body) - set(DEPLOYMENT_FIELDS))
    if unknown:
        raise Invalid(f"Validation failed: unknown field(s) {', '.join(unknown)}")


def _validate(services: Services, provider: Provider, level: str, body: Mapping[str, Any], row: IntegrationSetting | None) -> dict[str, Any]:
    """The column values ``body`` sets (None: removed), checked."""
    allowed = DEPLOYMENT_FIELDS if level == "deployment" else WORKSPACE_FIELDS
    check_fields(body)
    refused = sorted(set(body) - set(allowed))
    if refused:
        raise Invalid(
            f"Validation failed: {', '.join(refused)} can be set for the deployment only: provider webhooks arrive at the deployment's "
            f"/webhook/{provider.name} and are verified before their workspace is known"
        )
    app_fields = [name for name in APP_FIELDS if name in body]
    if app_fields and provider.auth_mode != "oauth2":
        raise Invalid(f"Validation failed: {provider.display_name} connects with {provider.auth_mode}, not OAuth: {', '.join(app_fields)} do not apply")
    hooks = [name for name in ("webhookSecret", "webhookVerifyToken") if body.get(name) is not None]
    if hooks and not receives_webhooks(services, provider):
        raise Invalid(f"Validation failed: {provider.display_name} receives no webhooks: {', '.join(hooks)} do not apply")
    values: dict[str, Any] = {}
    if "clientId" in body:
        if body["clientId"] is None:
            if body.get("clientSecret") is not None:
                raise Invalid("Validation failed: clientSecret needs a clientId")
            values.update(client_id=None, client_secret=None)
        else:
            values["client_id"] = _text("clientId", body["clientId"], limit=500)
            if body.get("clientSecret") is None and not (row is not None and row.client_secret and row.client_id == values["client_id"]):
                raise Invalid("Validation failed: clientSecret is required with a new clientId")
    if "clientSecret" in body:
        if body["clientSecret"] is None:
            if body.get("clientId", ...) is not None:
                raise Invalid("Validation failed: clientSecret can be removed only with the clientId (clientId: null)")
        else:
            if "client_id" not in values and not (row is not None and row.client_id):
                raise Invalid("Validation failed: clientSecret needs a clientId")
            values["client_secret"] = _text("clientSecret", body["clientSecret"], limit=4000)
    if "scopes" in body:
        values["scopes"] = None if body["scopes"] is None else _scopes(body["scopes"])
    if "apiBaseUrl" in body:
        values["api_base_url"] = None if body["apiBaseUrl"] is None else check_base_url(services, provider, body["apiBaseUrl"])
    for field, column in (("webhookSecret", "webhook_secret"), ("webhookVerifyToken", "webhook_verify_token")):
        if field in body:
            values[column] = None if body[field] is None else _text(field, body[field], limit=4000)
    return values


SECRET_COLUMNS = ("client_secret", "webhook_secret", "webhook_verify_token")
VALUE_COLUMNS = ("client_id", "client_secret", "scopes", "api_base_url", "webhook_secret", "webhook_verify_token")


def _scope_of(workspace_id: str | None) -> str:
    return DEPLOYMENT if workspace_id is None else workspace_id


async def _row(session, scope: str, provider: str) -> IntegrationSetting | None:
    return await session.scalar(select(IntegrationSetting).where(IntegrationSetting.scope == scope, IntegrationSetting.provider == provider))


async def _bump(session) -> None:
    await session.execute(update(IntegrationVersion).where(IntegrationVersion.id == 1).values(version=IntegrationVersion.version + 1))


async def save(services: Services, *, workspace_id: str | None, provider_name: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """Set the fields ``body`` names (camelCase; null removes one) for ``provider_name`` at the
    deployment's level (``workspace_id`` None) or the workspace's; answers :func:`describe`."""
    provider = provider_named(services, provider_name)
    level = "deployment" if workspace_id is None else "workspace"
    scope = _scope_of(workspace_id)
    async with services.db.transaction() as session:
        row = await _row(session, scope, provider.name)
        values = _validate(services, provider, level, body, row)
        if row is None:
            row = IntegrationSetting(scope=scope, workspace_id=workspace_id, provider=provider.name)
            session.add(row)
        for column, value in values.items():
            if column in SECRET_COLUMNS:
                setattr(row, column, services.secrets.encrypt(value) if value is not None else None)
                setattr(row, column + "_fingerprint", _fingerprint(services, value))
            else:
                setattr(row, column, value)
        if all(getattr(row, column) is None for column in VALUE_COLUMNS):
            if row in session.new:
                session.expunge(row)
            else:
                await session.delete(row)
        await _bump(session)
    runtime(services).forget()
    return await describe(services, workspace_id=workspace_id, provider_name=provider.name)


async def delete(services: Services, *, workspace_id: str | None, provider_name: str) -> None:
    """Remove every value stored for ``provider_name`` at the level: the next level's apply."""
    provider = provider_named(services, provider_name)
    async with services.db.transaction() as session:
        row = await _row(session, _scope_of(workspace_id), provider.name)
        if row is None:
            raise NotFound(f"No {provider.name} settings are stored for the {'deployment' if workspace_id is None else 'workspace'}")
        await session.delete(row)
        await _bump(session)
    runtime(services).forget()


def _fingerprint(services: Services, value: str | None) -> str | None:
    """A short keyed digest of a secret: tells two secrets apart without revealing either."""
    return None if value is None else services.secrets.digest(value)[:FINGERPRINT_CHARS]


def _file_table(services: Services, provider: str) -> Mapping[str, Any]:
    return services.settings.providers.get(provider, {})


def _row_json(row: IntegrationSetting | None) -> dict[str, Any]:
    row = row or IntegrationSetting()
    return {
        "stored": row.id is not None and row.provider is not None,
        "clientId": row.client_id,
        "clientSecretSet": bool(row.client_secret),
        "clientSecretFingerprint": row.client_secret_fingerprint if row.client_secret else None,
        "scopes": list(row.scopes) if row.scopes is not None else None,
        "apiBaseUrl": row.api_base_url,
        "webhookSecretSet": bool(row.webhook_secret),
        "webhookSecretFingerprint": row.webhook_secret_fingerprint if row.webhook_secret else None,
        "webhookVerifyTokenSet": bool(row.webhook_verify_token),
        "webhookVerifyTokenFingerprint": row.webhook_verify_token_fingerprint if row.webhook_verify_token else None,
        "updatedAt": iso(row.updated_at) if row.updated_at else None,
    }


async def describe(services: Services, *, workspace_id: str | None, provider_name: str) -> dict[str, Any]:
    """What is stored for the provider at the level (never a secret: whether it is set and its
    fingerprint), and what is in effect there, with where each value comes from."""
    provider = provider_named(services, provider_name)
    async with services.db.session() as session:
        rows = {
            row.scope: row
            for row in await session.scalars(
                select(IntegrationSetting).where(
                    IntegrationSetting.provider == provider.name, IntegrationSetting.scope.in_([DEPLOYMENT, _scope_of(workspace_id)])
                )
            )
        }
    byoa = None
    if workspace_id is not None:
        async with services.db.session(tenant=workspace_id) as session:
            byoa = await session.scalar(select(ByoaCredential).where(ByoaCredential.provider == provider.name))
    own = rows.get(_scope_of(workspace_id)) if workspace_id is not None else None
    deployment = rows.get(DEPLOYMENT)
    file = _file_secrets(services, provider.name)
    table = _file_table(services, provider.name)
    oauth = provider.auth_mode == "oauth2"

    def first(*candidates: tuple[str, Any]) -> tuple[str | None, Any]:
        for origin, value in candidates:
            if value:
                return origin, value
        return None, None

    app_from, client_id = (
        first(
            ("workspace", own and own.client_id),
            ("workspace", byoa and byoa.client_id),
            ("deployment", deployment and deployment.client_id),
            ("file", file.client_id),
        )
        if oauth
        else (None, None)
    )
    scopes_from, scopes = first(
        ("workspace", own and own.scopes),
        ("workspace", byoa and app_from == "workspace" and not (own and own.client_id) and byoa.scopes),
        ("deployment", deployment and deployment.scopes),
        ("file" if "scopes" in table else "definition", list(provider.scopes)),
    )
    base_from, base_url = first(
        ("workspace", own and own.api_base_url),
        ("deployment", deployment and deployment.api_base_url),
        ("file" if "api_base_url" in table else "definition", provider.api_base_url),
    )
    hooks = receives_webhooks(services, provider)
    secret_from, _ = first(("deployment", deployment and deployment.webhook_secret), ("file", file.webhook_secret)) if hooks else (None, None)
    token_from, _ = first(("deployment", deployment and deployment.webhook_verify_token), ("file", file.webhook_verify_token)) if hooks else (None, None)
    stored = _row_json(own if workspace_id is not None else deployment)
    return {
        "provider": provider.name,
        "displayName": provider.display_name,
        "authMode": provider.auth_mode,
        "level": "deployment" if workspace_id is None else "workspace",
        **stored,
        "effective": {
            "canConnect": not oauth or client_id is not None,
            "oauthAppFrom": app_from,
            "clientId": client_id,
            "scopes": list(scopes or []),
            "scopesFrom": scopes_from,
            "apiBaseUrl": base_url,
            "apiBaseUrlFrom": base_from,
            "receivesWebhooks": hooks,
            "webhookUrl": f"{services.settings.public_base_url.rstrip('/')}/webhook/{provider.name}" if hooks else None,
            "webhookSecretFrom": secret_from,
            "webhookVerifyTokenFrom": token_from,
        },
    }


async def stored_list(services: Services, *, workspace_id: str | None) -> list[dict[str, Any]]:
    """The providers with settings stored at the level, by provider name."""
    async with services.db.session() as session:
        names = list(
            await session.scalars(
                select(IntegrationSetting.provider).where(IntegrationSetting.scope == _scope_of(workspace_id)).order_by(IntegrationSetting.provider)
            )
        )
    return [await describe(services, workspace_id=workspace_id, provider_name=name) for name in names if services.registry.provider(name) is not None]


@attrs.frozen
class Overview:
    """One provider on the console's integrations page (never a secret)."""

    provider: Provider
    #: how a connection is made: ``api_key``, ``basic``, ``oauth2_cc``, ``none``, ``oauth:workspace``,
    #: ``oauth:deployment``, or None (an OAuth provider without an app)
    connects_with: str | None
    webhook_url: str | None
    webhook_secret_set: bool
    verify_token_set: bool
    #: which values are stored at the workspace's and at the deployment's level
    workspace_stored: bool
    deployment_stored: bool


async def overview(services: Services, *, workspace_id: str) -> list[Overview]:
    """Every installed provider by display name: whether and how it can connect in the workspace,
    its webhook URL and whether its webhook secret is set (the file's or the stored one)."""
    async with services.db.session() as session:
        rows = list(await session.scalars(select(IntegrationSetting).where(IntegrationSetting.scope.in_([DEPLOYMENT, workspace_id]))))
    async with services.db.session(tenant=workspace_id) as session:
        byoa = set(await session.scalars(select(ByoaCredential.provider)))
    own = {row.provider: row for row in rows if row.scope == workspace_id}
    deployment = {row.provider: row for row in rows if row.scope == DEPLOYMENT}
    base = services.settings.public_base_url.rstrip("/")
    found = []
    for provider in sorted(services.registry.providers.values(), key=lambda p: p.display_name.lower()):
        file = _file_secrets(services, provider.name)
        mine, theirs = own.get(provider.name), deployment.get(provider.name)
        if provider.auth_mode != "oauth2":
            connects = provider.auth_mode
        elif (mine and mine.client_id) or provider.name in byoa:
            connects = "oauth:workspace"
        elif (theirs and theirs.client_id) or file.client_id:
            connects = "oauth:deployment"
        else:
            connects = None
        hooks = receives_webhooks(services, provider)
        found.append(
            Overview(
                provider,
                connects,
                f"{base}/webhook/{provider.name}" if hooks else None,
                bool((theirs and theirs.webhook_secret) or file.webhook_secret),
                bool((theirs and theirs.webhook_verify_token) or file.webhook_verify_token),
                mine is not None,
                theirs is not None,
            )
        )
    return found
