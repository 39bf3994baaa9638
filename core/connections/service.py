"""Connection services called by the HTTP layer, jobs and other features: connect with API-key
credentials, import tokens, disconnect, check health; and :func:`install`, the domain's part of the
services."""

from __future__ import annotations

import base64
import binascii
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select, update

from patchbay.core.approvals import service as approvals  # which imports this module: its names are read when called
from patchbay.core.connections import store
from patchbay.core.connections.auth import (
    OAuthApp,
    ProviderAuthError,
    TemplateError,
    UnvouchedHost,
    auth_for,
    check_fillable,
    check_oauth_hosts,
    connection_params,
    fill_url,
)
from patchbay.core.connections.client import client_for_state
from patchbay.core.connections.facts import credential_fields
from patchbay.core.connections.lifecycle import ConnectionRemoval, RemovalListeners
from patchbay.core.connections.models import ACTIVE_STATUSES, Connection
from patchbay.core.connections.refresh import RefreshFailed, can_refresh, refresh_connection
from patchbay.core.connections.runtime import ConnectionsRuntime, ConnectionState
from patchbay.core.connections.store import auth_context, encrypt_credentials, get_row, load_state, oauth_app_for, save_connection, token_credentials
from patchbay.core.errors import Conflict, DomainError, Invalid, NotFound, UpstreamFailed
from patchbay.core.plugins.provider import Provider
from patchbay.core.security.auth import Principal
from patchbay.core.timeutil import iso, new_id, utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services

log = logging.getLogger(__name__)


def install(services: Services) -> None:
    """The connections runtime (``services.connections``), the removal listeners other domains add
    to, the periodic jobs token-refresh and connection-health, and the audit rows written at stop."""
    from patchbay.core.connections.jobs import cron_jobs  # the jobs call this module's services

    services.connections = ConnectionsRuntime(services)
    services.connection_removal_listeners = RemovalListeners()
    for job in cron_jobs():
        services.cron.add(job)
    services.add_resource(_audit_written_at_stop)


@contextlib.asynccontextmanager
async def _audit_written_at_stop(services: Services) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await services.connections.audit.close()


API_KEY_MODES = ("api_key", "basic", "oauth2_cc", "none")


def provider_named(services: Services, name: str) -> Provider:
    provider = services.registry.provider(name)
    if provider is None:
        raise NotFound(f"Provider not found: {name}")
    return provider


def split_params(
    provider: Provider, params: Mapping[str, Any] | None, metadata: Mapping[str, Any] | None, *, learned: tuple[str, ...] = (), from_caller: bool = True
) -> dict[str, str]:
    """Connection parameters from an explicit ``params`` object, else from metadata keys that name
    a declared parameter; each declared parameter without a default is required, except those the
    provider's auth handler learns from the token response (``learned``). A caller's value for a
    parameter the deployment fixes (``fixed_params``) is refused (``from_caller=False``: values
    learnt from the provider, which may set them)."""
    values: dict[str, str] = {}
    for source in (metadata or {}, params or {}):
        for key, value in source.items():
            if key in provider.connection_params and value not in (None, ""):
                values[key] = str(value)
    fixed = sorted(set(values) & set(provider.fixed_params)) if from_caller else []
    if fixed:
        raise Invalid(f"Validation failed: connection parameter(s) {', '.join(fixed)} are set by the deployment and cannot be given")
    missing = [key for key in provider.connection_params if key not in values and key not in provider.connection_param_defaults and key not in learned]
    missing = [key for key in missing if key not in provider.optional_fields]  # used only when given
    if missing:
        raise Invalid(f"Validation failed: connection parameter(s) required: {', '.join(missing)}")
    return values


def _api_key_credentials(provider: Provider, credentials: Mapping[str, Any]) -> dict[str, Any]:
    if provider.auth_mode == "none":
        return {}  # a public API: the connection only holds parameters and metadata
    api_key = credentials.get("apiKey")
    if not isinstance(api_key, str) or not api_key.strip():
        raise Invalid("Validation failed: credentials.apiKey is required")
    api_secret = credentials.get("apiSecret")
    if api_secret is not None and not isinstance(api_secret, str):
        raise Invalid("Validation failed: credentials.apiSecret must be a string")
    # required as the provider's connect facts say, which the connect form shows
    if not (api_secret or "").strip() and any(field["name"] == "apiSecret" and field["required"] for field in credential_fields(provider)):
        raise Invalid("Validation failed: credentials.apiSecret is required")
    if provider.auth_mode == "basic":
        return {"username": api_key, "password": api_secret or "" if provider.basic_password is None else provider.basic_password}
    if provider.auth_mode == "oauth2_cc":
        return {"client_id": api_key, "client_secret": api_secret}
    return {"api_key": api_key, "api_secret": api_secret}


async def connect_with_api_key(
    services: Services,
    *,
    workspace_id: str,
    provider_name: str,
    credentials: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
    validate: bool = True,
    reconnect_id: str | None = None,
    end_user_id: str | None = None,
) -> Connection:
    """Connect the workspace to an API-key provider (API key, basic, or client credentials) and
    answer the stored connection; ``reconnect_id`` renews that connection's credentials instead;
    ``end_user_id`` is the customer's end user it is made for (the connect UI).

    ``credentials`` is the body's ``{apiKey, apiSecret?}``. When the provider has a cheap check
    (its definition's ``health_check`` or an auth hook's ``check``), the credential is proved
    before it is stored (400 naming the provider's refusal); client-credentials providers are
    proved by obtaining a token. Enforces the plan's provider count (403).
    """
    provider = provider_named(services, provider_name)
    if provider.auth_mode == "oauth2":
        raise Invalid(f"{provider.display_name} connects with OAuth: use GET /auth/{provider.name}/login")
    stored = _api_key_credentials(provider, credentials)
    values = split_params(provider, params, metadata)
    try:
        fill_url(provider.api_base_url, provider, connection_params(provider, values))
    except TemplateError as error:
        raise Invalid(str(error)) from None
    handler = auth_for(services.registry, provider.name)
    expires_at = None
    scopes: list[str] = []
    learnt: dict[str, str] = {}
    learnt_meta: dict[str, Any] = {}
    oauth_app = None
    if provider.auth_mode == "oauth2_cc":
        oauth_app = "connection"
        ctx = auth_context(services, provider, OAuthApp(client_id=stored["client_id"], client_secret=stored.get("client_secret"), source="connection"), values)
        try:
            tokens = await handler.client_credentials(ctx)
        except ProviderAuthError as error:
            raise Invalid(f"Credentials rejected by {provider.display_name}: {error.message}") from None
        stored = token_credentials(tokens, stored)
        expires_at, scopes, learnt, learnt_meta = tokens.expires_at, list(tokens.scopes), dict(tokens.params), dict(tokens.metadata)
    connection_id = new_id()
    verdict = None
    if validate:
        state = ConnectionState(
            id=connection_id,
            workspace_id=workspace_id,
            provider=provider.name,
            status="connected",
            credentials=stored,
            params={**values, **learnt},
            metadata=dict(metadata or {}),
            scopes=scopes,
            expires_at=expires_at,
            oauth_app=oauth_app,
        )
        try:
            verdict = await handler.check(client_for_state(services, state, provider, source="validate"))
        except ProviderAuthError as error:
            log.info("could not validate %s credentials: %s", provider.name, error.message)
            verdict = None
        if verdict is False:
            raise Invalid(f"Credentials rejected by {provider.display_name}")
    async with services.db.transaction(tenant=workspace_id) as session:
        connection = await save_connection(
            services,
            session,
            workspace_id=workspace_id,
            provider=provider.name,
            credentials=stored,
            params={**values, **learnt},
            metadata={**learnt_meta, **dict(metadata or {})},
            scopes=scopes,
            expires_at=expires_at,
            oauth_app=oauth_app,
            connection_id=reconnect_id,
            new_connection_id=connection_id,
            health={True: "healthy"}.get(verdict),
        )
        if end_user_id is not None:
            connection.end_user_id = end_user_id
        return connection


async def import_tokens(
    services: Services,
    *,
    workspace_id: str,
    provider_name: str,
    access_token: str,
    refresh_token: str | None = None,
    expires_at: datetime | None = None,
    metadata: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
    scopes: list[str] | None = None,
) -> Connection:
    """Store existing OAuth tokens as a new connection (4.18 import); refreshes use the workspace's
    BYOA app or the deployment's."""
    provider = provider_named(services, provider_name)
    if provider.auth_mode not in ("oauth2", "oauth2_cc"):
        raise Invalid(f"{provider.display_name} does not use OAuth tokens; connect it with POST /connect/v1/providers/{provider.name}/connect")
    values = split_params(provider, params, metadata)
    oauth_app = await oauth_app_for(services, workspace_id=workspace_id, provider=provider.name)
    try:  # refreshes use the deployment's app unless the workspace has its own now
        check_fillable(provider, values)
        check_oauth_hosts(provider, oauth_app.source if oauth_app else None, connection_params(provider, values))
    except UnvouchedHost as error:
        raise Invalid(error.message) from None
    except TemplateError as error:
        raise Invalid(str(error)) from None
    async with services.db.transaction(tenant=workspace_id) as session:
        return await save_connection(
            services,
            session,
            workspace_id=workspace_id,
            provider=provider.name,
            credentials={"access_token": access_token, "refresh_token": refresh_token, "token_type": "Bearer"},
            params=values,
            metadata=metadata,
            scopes=scopes or [],
            expires_at=expires_at,
            oauth_app=oauth_app.source if oauth_app else None,
        )


async def fresh_token(services: Services, *, workspace_id: str, connection_id: str) -> ConnectionState:
    """The connection with an unexpired access token, refreshed first when it is expired or about
    to expire (4.18 token)."""
    state = await load_state(services, connection_id, workspace_id=workspace_id, fresh=True)
    if state.status in ("invalid", "disconnected"):
        raise Conflict(f"Connection {connection_id} is {state.status}; reconnect it")
    if not state.access_token:
        raise Invalid(f"Connection {connection_id} has no access token ({state.provider} uses API-key credentials)")
    if state.expires_within(60) and can_refresh(services, state):
        try:
            state = await refresh_connection(services, connection_id, workspace_id=workspace_id, ahead=60)
        except RefreshFailed as error:
            raise (Conflict if error.permanent else UpstreamFailed)(f"Token refresh failed: {error.message}") from None
    return state


async def disconnect(services: Services, *, workspace_id: str, connection_id: str, revoke: bool = True, delete: bool = False) -> bool:
    """Revoke the credential at the provider where its definition allows (never blocking), then mark
    the connection disconnected (credentials wiped) or delete it, telling the removal listeners
    (``lifecycle``) in the same transaction. Answers whether the provider confirmed the revocation."""
    state = await load_state(services, connection_id, workspace_id=workspace_id, fresh=True)
    revoked = False
    provider = services.registry.provider(state.provider)
    if revoke and provider is not None and state.status != "disconnected":
        oauth_app = await oauth_app_for(services, workspace_id=workspace_id, provider=provider.name, source=state.oauth_app, credentials=state.credentials)
        try:
            ctx = auth_context(services, provider, oauth_app, state.params)
            revoked = bool(await auth_for(services.registry, provider.name).revoke(ctx, state.credentials))
        except Exception:  # a revocation failure never keeps the customer connected
            log.warning("revoking connection %s at %s failed", connection_id, state.provider, exc_info=True)
    async with services.db.transaction(tenant=workspace_id) as session:
        row = await get_row(session, connection_id)
        if row.status != "disconnected" or delete:
            removal = ConnectionRemoval(workspace_id=row.workspace_id, provider=row.provider, connection_id=row.id, end_user_id=row.end_user_id, deleted=delete)
            await services.connection_removal_listeners.notify(session, removal)
        if delete:
            await session.delete(row)
        else:
            row.status = "disconnected"
            row.credentials = encrypt_credentials(services, {})
            row.health = None
    services.connections.forget(connection_id)
    return revoked


async def check_health(services: Services, *, workspace_id: str | None, connection_id: str) -> dict[str, Any]:
    """Check one connection now: refresh an expiring token, then the provider's cheap check.
    Stores and answers ``health``: healthy, unhealthy (the provider refused the credential),
    invalid (refresh refused for good), error (the provider failed), unknown (no check exists)."""
    state = await load_state(services, connection_id, workspace_id=workspace_id, fresh=True)
    provider = services.registry.provider(state.provider)
    detail = None
    if state.status == "disconnected":
        health = "disconnected"
    elif state.status == "invalid" or provider is None:
        health = "invalid" if provider is not None else "error"
        detail = None if provider is not None else f"provider {state.provider} is not installed"
    else:
        health = "unknown"
        try:
            if state.expires_within(60) and can_refresh(services, state):
                state = await refresh_connection(services, connection_id, workspace_id=state.workspace_id, ahead=60)
            verdict = await auth_for(services.registry, provider.name).check(client_for_state(services, state, provider, source="health"))
            if verdict is True:
                health = "healthy"
            elif verdict is False:
                health = "unhealthy"
                detail = f"{provider.display_name} refused the credentials"
            elif state.expires_at is not None and state.expires_within(0):
                health, detail = "unhealthy", "the access token has expired"
        except RefreshFailed as error:
            health = "invalid" if error.permanent else "error"
            detail = error.message
        except (ProviderAuthError, DomainError) as error:
            health, detail = "error", getattr(error, "message", str(error))
    now = utcnow()
    async with services.db.transaction() as session:
        await session.execute(
            update(Connection)
            .where(Connection.id == connection_id)
            .values(health=health, last_health_check_at=now)
            .execution_options(synchronize_session=False)
        )
    services.connections.forget(connection_id)
    return {
        "connectionId": connection_id,
        "provider": state.provider,
        "status": "invalid" if health == "invalid" else state.status,
        "health": health,
        "detail": detail,
        "checkedAt": now,
    }


async def disconnect_provider_user(services: Services, *, provider: str, user_id: str) -> int:
    """Disconnect (without revoking: the provider already has) every workspace's connection of
    ``provider`` whose metadata ``user_id`` is ``user_id``; answer how many."""
    async with services.db.session() as session:
        rows = (
            await session.execute(
                select(Connection.id, Connection.workspace_id, Connection.meta).where(Connection.provider == provider, Connection.status != "disconnected")
            )
        ).all()
    matched = [(connection_id, workspace_id) for connection_id, workspace_id, meta in rows if str((meta or {}).get("user_id", "")) == user_id]
    for connection_id, workspace_id in matched:
        await disconnect(services, workspace_id=workspace_id, connection_id=connection_id, revoke=False)
    return len(matched)


async def active_connection_ids(services: Services, *, workspace_id: str, provider: str) -> list[str]:
    async with services.db.session(tenant=workspace_id) as session:
        rows = await session.scalars(select(Connection.id).where(Connection.provider == provider, Connection.status.in_(ACTIVE_STATUSES)))
        return list(rows)


async def connect_approval(services: Services, *, workspace_id: str, provider: str, principal: Principal, payload: dict[str, Any] | None) -> str | None:
    """The id of the approval request that now holds this connect, or None when it may go ahead
    (``approvals.service.gate_connect``)."""
    async with services.db.transaction(tenant=workspace_id) as session:
        return await approvals.gate_connect(services, session, workspace_id=workspace_id, provider=provider, principal=principal, payload=payload)


async def require_import_allowed(services: Services, *, workspace_id: str, provider: str, principal: Principal) -> None:
    """Refuse (403) the import of tokens of a provider the approval policy gates, unless the caller approves."""
    async with services.db.session(tenant=workspace_id) as session:
        await approvals.require_ungated_or_approver(services, session, workspace_id=workspace_id, provider=provider, principal=principal)


# ---------------------------------------------------------------------------------------------
# What the connect API shows of connections (never their credentials)
# ---------------------------------------------------------------------------------------------


def connection_json(row: Connection) -> dict[str, Any]:
    """A connection as the API shows it (``ConnectionOut``): never its credentials."""
    return {
        "id": row.id,
        "connectionId": row.id,
        "provider": row.provider,
        "status": row.status,
        "health": row.health,
        "connectedAt": iso(row.connected_at),
        "expiresAt": iso(row.expires_at),
        "lastRefreshedAt": iso(row.last_refreshed_at),
        "lastHealthCheckAt": iso(row.last_health_check_at),
        "refreshError": row.refresh_error,
        "metadata": row.meta or {},
        "params": row.params or {},
        "scopes": row.scopes or [],
        "endUserId": row.end_user_id,
        "createdAt": iso(row.created_at),
        "updatedAt": iso(row.updated_at),
    }


async def provider_status(services: Services, *, workspace_id: str, provider: str) -> dict[str, Any]:
    """The workspace's connection state for ``provider`` (``ProviderStatus``)."""
    async with services.db.session(tenant=workspace_id) as session:
        row = await store.latest_connection(session, provider)
    if row is None:
        return {"status": "not_connected", "connectedAt": None, "metadata": {}, "connectionId": None}
    return {
        "status": row.status,
        "connectedAt": iso(row.connected_at),
        "metadata": row.meta or {},
        "connectionId": row.id,
        "health": row.health,
        "expiresAt": iso(row.expires_at),
    }


async def health_report(services: Services, *, workspace_id: str) -> dict[str, Any]:
    """The health of every connection of the workspace (disconnected ones left out), with counts (``HealthReport``)."""
    async with services.db.session(tenant=workspace_id) as session:
        rows = await store.live_connections(session)
    data = [
        {
            "connectionId": r.id,
            "provider": r.provider,
            "status": r.status,
            "health": r.health or ("invalid" if r.status == "invalid" else "unknown"),
            "lastHealthCheckAt": iso(r.last_health_check_at),
            "expiresAt": iso(r.expires_at),
            "refreshError": r.refresh_error,
        }
        for r in rows
    ]
    summary: dict[str, int] = {}
    for item in data:
        summary[item["health"]] = summary.get(item["health"], 0) + 1
    return {"data": data, "summary": summary, "total": len(data)}


async def connection_page(
    services: Services, *, workspace_id: str, provider: str | None, status: str | None, end_user_id: str | None, page: int, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """A page of the workspace's connections, newest first, and how many match."""
    async with services.db.session(tenant=workspace_id) as session:
        rows, total = await store.connection_page(session, provider=provider, status=status, end_user_id=end_user_id, page=page, limit=limit)
        return [connection_json(row) for row in rows], total


async def connection_of(services: Services, *, workspace_id: str, connection_id: str) -> dict[str, Any]:
    """One connection of the workspace; ``ConnectionNotFound`` for another workspace's."""
    async with services.db.session(tenant=workspace_id) as session:
        return connection_json(await store.get_row(session, connection_id))


async def update_metadata(services: Services, *, workspace_id: str, connection_id: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``metadata`` into the connection's (a key set to None is removed) and answer the connection."""
    async with services.db.transaction(tenant=workspace_id) as session:
        row = await store.merge_metadata(services, session, workspace_id=workspace_id, connection_id=connection_id, metadata=metadata)
        answer = connection_json(row)
    services.connections.forget(connection_id)
    return answer


def _encode_cursor(moment: datetime, row_id: str) -> str:
    return base64.urlsafe_b64encode(f"{moment.isoformat()}|{row_id}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        moment, row_id = raw.split("|", 1)
        return datetime.fromisoformat(moment), row_id
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise Invalid("Query parameter 'cursor' is not valid") from None


async def audit_page(services: Services, *, workspace_id: str, connection_id: str, cursor: str | None, limit: int) -> dict[str, Any]:
    """The calls made with the connection, newest first, from ``cursor`` on (``AuditPage``); the
    rows still buffered are written first, so the page is complete."""
    after = _decode_cursor(cursor) if cursor else None
    await services.connections.audit.flush()
    async with services.db.session(tenant=workspace_id) as session:
        await store.get_row(session, connection_id)  # 404 for another workspace's connection
        rows = await store.audit_page(session, connection_id, after=after, limit=limit)
    more = len(rows) > limit
    rows = rows[:limit]
    data = [
        {
            "id": r.id,
            "connectionId": r.connection_id,
            "provider": r.provider,
            "source": r.source,
            "method": r.method,
            "path": r.path,
            "status": r.status,
            "durationMs": r.duration_ms,
            "error": r.error,
            "clientId": r.client_id,
            "userId": r.user_id,
            "createdAt": iso(r.created_at),
        }
        for r in rows
    ]
    return {"data": data, "nextCursor": _encode_cursor(rows[-1].created_at, rows[-1].id) if more and rows else None}


async def failing_refresh(services: Services, *, workspace_id: str, limit: int) -> tuple[list[Connection], int]:
    """The workspace's live connections whose token refresh is failing (expired or invalid, or a
    refresh error recorded), most recently changed first, at most ``limit``, and how many there are
    (the console's home)."""
    failing = (Connection.status.in_(("expired", "invalid"))) | ((Connection.status != "disconnected") & Connection.refresh_error.is_not(None))
    async with services.db.session(tenant=workspace_id) as session:
        total = await session.scalar(select(func.count()).select_from(Connection).where(failing))
        rows = await session.scalars(select(Connection).where(failing).order_by(Connection.updated_at.desc(), Connection.id).limit(limit))
        return list(rows), int(total or 0)
