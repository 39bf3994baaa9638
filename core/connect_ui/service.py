"""Connect sessions: create, list, revoke, resolve a token, and what the hosted page does with a
session (connect an API-key provider for its end user, reconnect, events to the customer).

Connecting itself is the connections feature's work (``connect_with_api_key``) behind the
approvals feature's gate; this module only adds the session's rules and the end user's id."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sqlalchemy import func, select, update

from patchbay.core.approvals.service import gate_connect
from patchbay.core.connect_ui.api_models import ALLOWED_PROVIDERS_ERROR, CreateConnectSessionDto, EndUserDto
from patchbay.core.connect_ui.models import ConnectSession
from patchbay.core.connections import service as connections
from patchbay.core.connections.lifecycle import ConnectionRemoval
from patchbay.core.connections.models import Connection
from patchbay.core.connections.store import get_row
from patchbay.core.errors import DomainError, Invalid, NotFound, Unauthenticated
from patchbay.core.integrations import service as integrations
from patchbay.core.plugins.provider import Provider
from patchbay.core.security.auth import Principal
from patchbay.core.security.secrets import random_token
from patchbay.core.timeutil import iso, utcnow
from patchbay.core.webhooks.delivery import create_deliveries
from patchbay.core.webhooks.models import WebhookEvent

if TYPE_CHECKING:
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

#: the prefix of every connect session token (tells a leaked one apart in a scan)
TOKEN_PREFIX = "pbcs_"


class SessionUnusable(Unauthenticated):
    """The token is unknown, expired, revoked or already used; ``reason`` says which."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.why = reason


def _string(value: str | None, field: str, *, required: bool = False, limit: int = 255) -> str | None:
    if value is None and not required:
        return None
    if value is None or not value.strip() or len(value) > limit:
        raise Invalid(f"Validation failed: {field} must be a non-empty string of at most {limit} characters")
    return value.strip()


def _return_url(value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Invalid("Validation failed: returnUrl must be an absolute http(s) URL")
    return value


def _end_user(end_user: EndUserDto | None) -> tuple[str, dict[str, Any]]:
    if end_user is None:
        raise Invalid("Validation failed: endUser is required ({id, email?, displayName?})")
    end_user_id = _string(end_user.id, "id", required=True)
    display = {"email": _string(end_user.email, "email"), "displayName": _string(end_user.displayName, "displayName")}
    return end_user_id, {key: value for key, value in display.items() if value is not None}


def _allowed(services: Services, value: list[str] | None) -> list[str] | None:
    if value is None:
        return None
    if not value:
        raise Invalid(f"Validation failed: {ALLOWED_PROVIDERS_ERROR}")
    unknown = [name for name in value if services.registry.provider(name) is None]
    if unknown:
        raise Invalid(f"Validation failed: unknown provider(s): {', '.join(unknown)}")
    return list(dict.fromkeys(value))


def _lifetime(services: Services, value: int | None) -> timedelta:
    settings = services.settings.connect_ui
    if value is None:
        return timedelta(minutes=settings.session_ttl_minutes)
    if not 1 <= value <= settings.max_session_ttl_minutes:
        raise Invalid(f"Validation failed: expiresInMinutes must be an integer from 1 to {settings.max_session_ttl_minutes}")
    return timedelta(minutes=value)


def hosted_url(services: Services, token: str) -> str:
    return f"{services.settings.public_base_url}/connect/ui?session={token}"


def session_json(row: ConnectSession) -> dict[str, Any]:
    """A session as the API shows it: never its token."""
    now = utcnow()
    status = "revoked" if row.revoked_at else "used" if row.used_at else "expired" if row.expires_at <= now else "active"
    return {
        "id": row.id,
        "status": status,
        "endUser": {"id": row.end_user_id, **(row.end_user or {})},
        "allowedProviders": row.allowed_providers,
        "metadata": row.default_metadata or {},
        "returnUrl": row.return_url,
        "reconnectConnectionId": row.reconnect_id,
        "connectionId": row.connection_id,
        "approvalId": row.approval_id,
        "expiresAt": iso(row.expires_at),
        "usedAt": iso(row.used_at),
        "revokedAt": iso(row.revoked_at),
        "createdAt": iso(row.created_at),
    }


async def create_session(services: Services, workspace_id: str, body: CreateConnectSessionDto) -> tuple[ConnectSession, str]:
    """Check ``body`` and store a new session; answers the row and its token (shown once)."""
    end_user_id, display = _end_user(body.endUser)
    allowed = _allowed(services, body.allowedProviders)
    metadata = body.metadata or {}
    return_url = _return_url(_string(body.returnUrl, "returnUrl", limit=2000))
    lifetime = _lifetime(services, body.expiresInMinutes)
    reconnect = _string(body.reconnectConnectionId, "reconnectConnectionId", limit=36)
    token = TOKEN_PREFIX + random_token()
    async with services.db.transaction(tenant=workspace_id) as session:
        if reconnect is not None:
            connection = await get_row(session, reconnect)  # 404 for another workspace's connection
            allowed = [connection.provider]
        row = ConnectSession(
            workspace_id=workspace_id,
            token_digest=services.secrets.digest(token),
            end_user_id=end_user_id,
            end_user=display,
            allowed_providers=allowed,
            default_metadata=metadata,
            return_url=return_url,
            reconnect_id=reconnect,
            expires_at=utcnow() + lifetime,
        )
        session.add(row)
        await session.flush()
    return row, token


async def list_sessions(services: Services, workspace_id: str, *, end_user_id: str | None, page: int, limit: int) -> tuple[list[ConnectSession], int]:
    conditions = [ConnectSession.end_user_id == end_user_id] if end_user_id else []
    async with services.db.session(tenant=workspace_id) as session:
        total = await session.scalar(select(func.count()).select_from(ConnectSession).where(*conditions))
        rows = await session.scalars(
            select(ConnectSession).where(*conditions).order_by(ConnectSession.created_at.desc(), ConnectSession.id).offset((page - 1) * limit).limit(limit)
        )
        return list(rows), int(total or 0)


async def get_session(services: Services, workspace_id: str, session_id: str) -> ConnectSession:
    async with services.db.session(tenant=workspace_id) as session:
        row = await session.get(ConnectSession, session_id)
    if row is None:
        raise NotFound(f"Connect session not found: {session_id}")
    return row


async def used_session(services: Services, session_id: str) -> ConnectSession | None:
    """The session the page's cookie names once it is used (the done page), else None."""
    async with services.db.session() as session:
        row = await session.scalar(select(ConnectSession).where(ConnectSession.id == session_id))
    return row if row is not None and row.used_at is not None else None


async def revoke_session(services: Services, workspace_id: str, session_id: str) -> ConnectSession:
    async with services.db.transaction(tenant=workspace_id) as session:
        row = await session.get(ConnectSession, session_id)
        if row is None:
            raise NotFound(f"Connect session not found: {session_id}")
        if row.revoked_at is None:
            row.revoked_at = utcnow()
        await session.flush()
        return row


async def usable_session(services: Services, token: str | None = None, *, session_id: str | None = None) -> ConnectSession:
    """The session of a token (or of an id the page's cookie carries) while it may still connect;
    raises :class:`SessionUnusable`."""
    if token is not None:
        condition = ConnectSession.token_digest.in_(services.secrets.digests(token)) if token.startswith(TOKEN_PREFIX) else None
    else:
        condition = ConnectSession.id == session_id
    row = None
    if condition is not None:
        async with services.db.session() as session:
            row = await session.scalar(select(ConnectSession).where(condition))
    if row is None:
        raise SessionUnusable("unknown", "This connect link is not valid.")
    if row.revoked_at is not None:
        raise SessionUnusable("revoked", "This connect link was cancelled.")
    if row.expires_at <= utcnow():
        raise SessionUnusable("expired", "This connect link has expired.")
    if row.used_at is not None:
        raise SessionUnusable("used", "This connect link was already used.")
    return row


async def offered_providers(services: Services, row: ConnectSession) -> list[Provider]:
    """The installed, available providers the session offers, by display name: those it names;
    without a list, those that can connect in its workspace (not OAuth, or OAuth with an app of
    the workspace or the deployment), so no end user picks a provider that would fail."""
    providers = [p for p in services.registry.providers.values() if p.is_available]
    if row.allowed_providers is not None:
        providers = [p for p in providers if p.name in row.allowed_providers]
    else:
        ready = await integrations.oauth_ready(services, workspace_id=row.workspace_id)
        providers = [p for p in providers if integrations.can_connect(p, ready)]
    return sorted(providers, key=lambda p: p.display_name.lower())


async def offered_provider(services: Services, row: ConnectSession, name: str) -> Provider:
    for provider in await offered_providers(services, row):
        if provider.name == name:
            return provider
    raise NotFound(f"Provider not offered: {name}")


def end_user_principal(row: ConnectSession) -> Principal:
    """Who connects through the page, as the approval gate sees them: never an approver."""
    return Principal("api_key", row.workspace_id, frozenset({"connections.write"}), subject=f"end_user:{row.end_user_id}")


async def connect_api_key(services: Services, row: ConnectSession, provider: Provider, credentials: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """Connect (or reconnect) the session's API-key provider with the end user's credentials.

    Answers ``{status: connected|reconnected, connectionId}`` or ``{status: pending_approval,
    approvalId}``; the session is used up either way. Raises the connection service's errors (the
    provider refused the key, a parameter is missing) and sends ``connection.failed``."""
    metadata = dict(row.default_metadata or {})
    body = {"credentials": credentials, "metadata": metadata, "params": params, "endUserId": row.end_user_id}
    async with services.db.transaction(tenant=row.workspace_id) as session:
        await _use(session, row)  # claimed first: a second submit racing this one finds it used
        approval_id = None
        if row.reconnect_id is None:
            approval_id = await gate_connect(
                services, session, workspace_id=row.workspace_id, provider=provider.name, principal=end_user_principal(row), payload=body
            )
        if approval_id is not None:
            await _record(session, row, approval_id=approval_id)
    if approval_id is not None:
        return {"status": "pending_approval", "approvalId": approval_id}
    try:
        connection = await connections.connect_with_api_key(
            services,
            workspace_id=row.workspace_id,
            provider_name=provider.name,
            credentials=credentials,
            metadata=metadata,
            params=params,
            reconnect_id=row.reconnect_id,
        )
    except DomainError as error:
        async with services.db.transaction(tenant=row.workspace_id) as session:
            await _record(session, row, used_at=None)  # a refused key leaves the link usable
        await emit(
            services, row.workspace_id, provider.name, "connection.failed", {"endUserId": row.end_user_id, "reason": error.message, "connectSessionId": row.id}
        )
        raise
    async with services.db.transaction(tenant=row.workspace_id) as session:
        await session.execute(
            update(Connection).where(Connection.id == connection.id).values(end_user_id=row.end_user_id).execution_options(synchronize_session=False)
        )
        await _record(session, row, connection_id=connection.id)
    event = "connection.reconnected" if row.reconnect_id else "connection.created"
    await emit(services, row.workspace_id, provider.name, event, {"connectionId": connection.id, "endUserId": row.end_user_id, "connectSessionId": row.id})
    return {"status": "reconnected" if row.reconnect_id else "connected", "connectionId": connection.id}


async def hold_for_approval(services: Services, row: ConnectSession, approval_id: str) -> None:
    """The workspace's policy holds the end user's OAuth connect: the session is used up."""
    async with services.db.transaction(tenant=row.workspace_id) as session:
        await _use(session, row, approval_id=approval_id)


async def finish_oauth(services: Services, row: ConnectSession, provider: Provider, connection_id: str) -> dict[str, Any]:
    """Claim the connection the OAuth callback made for this session's end user. The connection
    must carry this session's id in its metadata (put there when the login started), so a forged
    return URL naming another connection claims nothing."""
    async with services.db.transaction(tenant=row.workspace_id) as session:
        connection = await session.scalar(select(Connection).where(Connection.id == connection_id))
        if connection is None or connection.provider != provider.name or (connection.meta or {}).get("connectSessionId") != row.id:
            raise Invalid("The sign-in did not complete for this connect link. Start again.")
        connection.end_user_id = row.end_user_id
        await _use(session, row, connection_id=connection.id)
    event = "connection.reconnected" if row.reconnect_id else "connection.created"
    await emit(services, row.workspace_id, provider.name, event, {"connectionId": connection_id, "endUserId": row.end_user_id, "connectSessionId": row.id})
    return {"status": "reconnected" if row.reconnect_id else "connected", "connectionId": connection_id}


async def _record(session, row: ConnectSession, **values: Any) -> None:
    await session.execute(update(ConnectSession).where(ConnectSession.id == row.id).values(**values).execution_options(synchronize_session=False))


async def _use(session, row: ConnectSession, *, connection_id: str | None = None, approval_id: str | None = None) -> None:
    """Mark the session used, once: a second submit racing this one finds it taken."""
    result = await session.execute(
        update(ConnectSession)
        .where(ConnectSession.id == row.id, ConnectSession.used_at.is_(None))
        .values(used_at=utcnow(), connection_id=connection_id, approval_id=approval_id)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:
        raise SessionUnusable("used", "This connect link was already used.")


async def emit(services: Services, workspace_id: str, provider: str, event_type: str, data: dict[str, Any]) -> None:
    """Send a connection event to the workspace's webhook subscriptions of ``provider`` with the
    same signing and retries as forwarded provider events."""
    async with services.db.transaction(tenant=workspace_id) as session:
        await _record_event(services, session, workspace_id, provider, event_type, data)


async def _record_event(services: Services, session, workspace_id: str, provider: str, event_type: str, data: dict[str, Any]) -> None:
    event = WebhookEvent(workspace_id=workspace_id, provider=provider, status="PROCESSED", event_type=event_type, payload=data, processed_at=utcnow())
    session.add(event)
    await session.flush()
    await create_deliveries(services.jobs, session, event)


def install(services: Services) -> None:
    """The connect UI's part of the services: every disconnected or deleted connection, made here
    or not, becomes a ``connection.removed`` event, written in the removal's own transaction."""

    async def removed(session, removal: ConnectionRemoval) -> None:
        data = {"connectionId": removal.connection_id, "endUserId": removal.end_user_id, "deleted": removal.deleted}
        await _record_event(services, session, removal.workspace_id, removal.provider, "connection.removed", data)

    services.connection_removal_listeners.add(removed)
