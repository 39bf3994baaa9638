"""Reading and writing connections: encryption of credentials, the decrypted-state cache, the OAuth
app a connection uses, and the plan's provider count."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.billing.limits import enforce_limit
from patchbay.core.connections.auth import AuthContext, OAuthApp, TokenSet, connection_params
from patchbay.core.connections.models import ACTIVE_STATUSES, ByoaCredential, Connection, ProxyCallLog
from patchbay.core.connections.runtime import ConnectionState
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.integrations import service as integrations
from patchbay.core.plugins.provider import Provider
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks.routing_keys import ensure_routing_keys_free

if TYPE_CHECKING:
    from patchbay.core.services import Services


class ConnectionNotFound(NotFound):
    def __init__(self, connection_id: str) -> None:
        super().__init__(f"Connection not found: {connection_id}")


def encrypt_credentials(services: Services, credentials: Mapping[str, Any]) -> str:
    clean = {key: value for key, value in credentials.items() if value not in (None, "")}
    return services.secrets.encrypt(json.dumps(clean, separators=(",", ":")))


def decrypt_credentials(services: Services, stored: str) -> dict[str, Any]:
    return json.loads(services.secrets.decrypt(stored))


def state_of(services: Services, row: Connection) -> ConnectionState:
    return ConnectionState(
        id=row.id,
        workspace_id=row.workspace_id,
        provider=row.provider,
        status=row.status,
        credentials=decrypt_credentials(services, row.credentials),
        params=dict(row.params or {}),
        metadata=dict(row.meta or {}),
        scopes=list(row.scopes or []),
        expires_at=row.expires_at,
        oauth_app=row.oauth_app,
        connected_at=row.connected_at,
    )


async def load_state(services: Services, connection_id: str, *, workspace_id: str | None, fresh: bool = False) -> ConnectionState:
    """The decrypted connection; 404 when it does not exist or belongs to another workspace.
    ``workspace_id=None`` is for system work (jobs) only."""
    rt = services.connections
    if fresh:
        return await _read_state(services, connection_id, workspace_id)
    state = rt.cached(connection_id)
    if state is None:
        # One read per expired entry however many calls arrive meanwhile: they share it.
        pending = rt.loading.get(connection_id)
        if pending is None:
            pending = rt.loading[connection_id] = asyncio.ensure_future(_read_state(services, connection_id, None))
            pending.add_done_callback(lambda _: rt.loading.pop(connection_id, None))
        try:
            state = await asyncio.shield(pending)
        except ConnectionNotFound:
            raise ConnectionNotFound(connection_id) from None
    if workspace_id is not None and state.workspace_id != workspace_id:
        raise ConnectionNotFound(connection_id)
    return state


async def _read_state(services: Services, connection_id: str, workspace_id: str | None) -> ConnectionState:
    async with services.db.session(tenant=workspace_id) as session:
        row = await session.scalar(select(Connection).where(Connection.id == connection_id))
    if row is None:
        raise ConnectionNotFound(connection_id)
    state = state_of(services, row)
    services.connections.remember(state)
    return state


async def get_row(session: AsyncSession, connection_id: str) -> Connection:
    row = await session.scalar(select(Connection).where(Connection.id == connection_id))
    if row is None:
        raise ConnectionNotFound(connection_id)
    return row


async def active_connection(session: AsyncSession, provider: str) -> Connection | None:
    """The most recently connected active connection of ``provider`` in the session's workspace."""
    return await session.scalar(
        select(Connection)
        .where(Connection.provider == provider, Connection.status.in_(ACTIVE_STATUSES))
        .order_by(Connection.connected_at.desc().nulls_last(), Connection.created_at.desc())
        .limit(1)
    )


async def latest_connection(session: AsyncSession, provider: str) -> Connection | None:
    """The active connection of ``provider``, else its most recently changed one, else None."""
    row = await active_connection(session, provider)
    if row is not None:
        return row
    return await session.scalar(select(Connection).where(Connection.provider == provider).order_by(Connection.updated_at.desc()).limit(1))


async def live_connections(session: AsyncSession) -> list[Connection]:
    """The session workspace's connections that are not disconnected, oldest first."""
    return list(await session.scalars(select(Connection).where(Connection.status != "disconnected").order_by(Connection.created_at)))


async def connection_page(
    session: AsyncSession, *, provider: str | None, status: str | None, end_user_id: str | None, page: int, limit: int
) -> tuple[list[Connection], int]:
    """A page of the session workspace's connections, newest first, and how many match."""
    conditions = []
    if provider:
        conditions.append(Connection.provider == provider)
    if status:
        conditions.append(Connection.status == status)
    if end_user_id:
        conditions.append(Connection.end_user_id == end_user_id)
    total = await session.scalar(select(func.count()).select_from(Connection).where(*conditions))
    rows = await session.scalars(
        select(Connection).where(*conditions).order_by(Connection.created_at.desc(), Connection.id).offset((page - 1) * limit).limit(limit)
    )
    return list(rows), int(total or 0)


async def merge_metadata(services: Services, session: AsyncSession, *, workspace_id: str, connection_id: str, metadata: Mapping[str, Any]) -> Connection:
    """Merge ``metadata`` into the connection's (a key set to None is removed), refusing a routing
    key another workspace holds. The caller forgets the cached state once the transaction commits."""
    row = await get_row(session, connection_id)
    merged = {key: value for key, value in {**(row.meta or {}), **metadata}.items() if value is not None}
    await ensure_routing_keys_free(services.db, services.registry, workspace_id=workspace_id, provider=row.provider, metadata=merged)
    row.meta = merged
    await session.flush()
    return row


async def audit_page(session: AsyncSession, connection_id: str, *, after: tuple[datetime, str] | None, limit: int) -> list[ProxyCallLog]:
    """Up to ``limit`` + 1 calls of the connection, newest first, older than ``after`` (the
    ``(created_at, id)`` of the last one seen): one more than asked tells whether more follow."""
    statement = select(ProxyCallLog).where(ProxyCallLog.connection_id == connection_id)
    if after is not None:
        moment, row_id = after
        statement = statement.where(or_(ProxyCallLog.created_at < moment, and_(ProxyCallLog.created_at == moment, ProxyCallLog.id < row_id)))
    return list(await session.scalars(statement.order_by(ProxyCallLog.created_at.desc(), ProxyCallLog.id.desc()).limit(limit + 1)))


# ---------------------------------------------------------------------------------------------
# Plan limit: the number of distinct providers a workspace is connected to
# ---------------------------------------------------------------------------------------------


async def count_providers(session: AsyncSession, workspace_id: str) -> int:
    return int(
        await session.scalar(
            select(func.count(func.distinct(Connection.provider))).where(Connection.workspace_id == workspace_id, Connection.status.in_(ACTIVE_STATUSES))
        )
        or 0
    )


async def enforce_provider_limit(session: AsyncSession, workspace_id: str, provider: str) -> None:
    """403 ``Plan limit exceeded for providers`` when connecting ``provider`` adds a provider the
    plan has no room for (another connection of an already connected provider is free)."""
    already = await session.scalar(
        select(Connection.id).where(Connection.workspace_id == workspace_id, Connection.provider == provider, Connection.status.in_(ACTIVE_STATUSES)).limit(1)
    )
    if already is None:
        await enforce_limit(session, workspace_id, "providers")


# ---------------------------------------------------------------------------------------------
# Writing a connection
# ---------------------------------------------------------------------------------------------


async def save_connection(
    services: Services,
    session: AsyncSession,
    *,
    workspace_id: str,
    provider: str,
    credentials: Mapping[str, Any],
    params: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    scopes: list[str] | tuple[str, ...] = (),
    expires_at: datetime | None = None,
    oauth_app: str | None = None,
    connection_id: str | None = None,
    new_connection_id: str | None = None,
    health: str | None = None,
) -> Connection:
    """Create a connection, or renew the credentials of ``connection_id`` (a re-authorization), in
    the caller's (tenant) transaction. Enforces the plan's provider count for a new connection.
    ``new_connection_id`` is the id of a new connection (when it had to be known before)."""
    now = utcnow()
    row = None
    if connection_id is not None:
        row = await get_row(session, connection_id)
        if row.provider != provider:
            raise Invalid(f"Connection {connection_id} is not a {provider} connection")
    if row is None or row.status not in ACTIVE_STATUSES:
        await enforce_provider_limit(session, workspace_id, provider)
    if row is None:
        row = Connection(workspace_id=workspace_id, provider=provider, meta={}, params={})
        if new_connection_id is not None:
            row.id = new_connection_id
        session.add(row)
    row.credentials = encrypt_credentials(services, credentials)
    row.params = {**(row.params or {}), **dict(params or {})}
    row.meta = {**(row.meta or {}), **dict(metadata or {})}
    await ensure_routing_keys_free(services.db, services.registry, workspace_id=workspace_id, provider=provider, metadata=row.meta)
    row.scopes = list(scopes)
    row.expires_at = expires_at
    row.oauth_app = oauth_app
    row.status = "connected"
    row.connected_at = now
    row.refresh_error = None
    row.refresh_retry_at = None
    row.refresh_failures = 0
    row.health = health
    await session.flush()
    services.connections.forget(row.id)
    return row


def token_credentials(tokens: TokenSet, previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Credentials to store from a token set; a refresh answered without a refresh token keeps the
    previous one (and the client of a client-credentials connection)."""
    credentials = dict(previous or {})
    credentials["access_token"] = tokens.access_token
    credentials["token_type"] = tokens.token_type
    if tokens.refresh_token:
        credentials["refresh_token"] = tokens.refresh_token
    return credentials


# ---------------------------------------------------------------------------------------------
# OAuth apps: the workspace's own (BYOA) first, else the deployment's
# ---------------------------------------------------------------------------------------------


async def byoa_app(services: Services, workspace_id: str, provider: str) -> OAuthApp | None:
    """The workspace's own OAuth app: stored through the integrations API, else its BYOA credentials."""
    stored = await integrations.workspace_app(services, workspace_id, provider)
    if stored is not None:
        return stored
    async with services.db.session(tenant=workspace_id) as session:
        row = await session.scalar(select(ByoaCredential).where(ByoaCredential.provider == provider))
    if row is None:
        return None
    return OAuthApp(client_id=row.client_id, client_secret=services.secrets.decrypt(row.client_secret), source="byoa")


async def deployment_app(services: Services, provider: str) -> OAuthApp | None:
    """The deployment's OAuth app: stored through the integrations API, else the settings file's."""
    return await integrations.deployment_app(services, provider)


async def oauth_app_for(
    services: Services, *, workspace_id: str, provider: str, source: str | None = None, credentials: Mapping[str, Any] | None = None
) -> OAuthApp | None:
    """The OAuth client to use: ``source`` names the one a connection was made with; without it the
    workspace's BYOA credentials win over the deployment's."""
    if source == "connection":
        creds = credentials or {}
        return OAuthApp(client_id=creds["client_id"], client_secret=creds.get("client_secret"), source="connection") if creds.get("client_id") else None
    if source in (None, "byoa"):
        found = await byoa_app(services, workspace_id, provider)
        if found is not None or source == "byoa":
            return found
    return await deployment_app(services, provider)


def auth_context(services: Services, provider: Provider, oauth_app: OAuthApp | None, params: Mapping[str, Any] | None) -> AuthContext:
    """The context handed to a provider's auth handler: the outbound client and guard, the OAuth
    app and the connection's parameters."""
    return AuthContext(
        provider=provider,
        http=services.outbound.session,
        app=oauth_app,
        params=connection_params(provider, params),
        guard=services.outbound.check,
        read_body=services.outbound.read_body,
    )
