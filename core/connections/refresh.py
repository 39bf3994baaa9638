"""Token refresh without races.

Providers that rotate refresh tokens invalidate the old one on use, so two parallel refreshes of one
connection leave one of them with a dead token. Here a refresh happens once however many callers
need it at the same moment:

1. in this process, callers of one connection queue on an asyncio lock; whoever gets it after a
   refresh finds the new token (in the cache or the row) and returns without calling the provider;
2. across processes (PostgreSQL, or several processes on one SQLite file), the caller that calls
   the provider first takes a lease on the row with a compare-and-swap ``UPDATE ... WHERE
   refresh_lease_until IS NULL OR refresh_lease_until < now``; the database lets exactly one
   UPDATE match. Others poll the row until the lease is gone and read the token it wrote. A crashed
   holder's lease expires after ``LEASE_SECONDS``.

A failed refresh sets a cooldown (``refresh_retry_at``, growing with consecutive failures) during
which nobody calls the provider again; ``invalid_grant`` marks the connection ``invalid`` for good.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sqlalchemy import or_, update

from patchbay.core.alerts import operator_events
from patchbay.core.connections.auth import ProviderAuthError, TemplateError, auth_for, connection_params, fill_url
from patchbay.core.connections.models import Connection
from patchbay.core.connections.runtime import ConnectionState
from patchbay.core.connections.store import auth_context, encrypt_credentials, load_state, oauth_app_for, token_credentials
from patchbay.core.timeutil import utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

LEASE_SECONDS = 45
POLL_SECONDS = 0.05
#: cooldown after the n-th consecutive failure: 30 s, 60 s, 120 s ... at most 15 minutes
COOLDOWN_BASE = 30
COOLDOWN_MAX = 900
#: the proxy refreshes a token this close to expiry; the token-refresh job much earlier
CALL_SKEW_SECONDS = 30
REFRESHABLE_MODES = ("oauth2", "oauth2_cc")


class RefreshFailed(Exception):
    """The token could not be refreshed; ``permanent`` when the connection is now invalid."""

    def __init__(self, message: str, *, permanent: bool = False, cooling_down: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.cooling_down = cooling_down


def can_refresh(services: Services, state: ConnectionState) -> bool:
    provider = services.registry.provider(state.provider)
    if provider is None or provider.auth_mode not in REFRESHABLE_MODES or not provider.refreshes:
        return False
    return provider.auth_mode == "oauth2_cc" or bool(state.credentials.get("refresh_token"))


def _needs_refresh(state: ConnectionState, *, stale_token: str | None, ahead: float) -> bool:
    if state.status in ("invalid", "disconnected"):
        return False
    if stale_token is not None and state.access_token == stale_token:
        return True
    return state.expires_within(ahead)


async def refresh_connection(
    services: Services, connection_id: str, *, workspace_id: str | None, stale_token: str | None = None, ahead: float = CALL_SKEW_SECONDS, force: bool = False
) -> ConnectionState:
    """Make sure the connection's token is fresh and answer the current state.

    :param stale_token: the access token a provider just refused (401): refresh unless the stored
        token is already another one.
    :param ahead: refresh when the token expires within this many seconds.
    :param force: refresh now whatever the expiry (the manual refresh route).
    :raises RefreshFailed: the provider refused or failed, or the connection is cooling down.
    """
    rt = services.connections
    async with rt.lock(connection_id):
        state = rt.cached(connection_id)
        if state is None or force or not _needs_refresh(state, stale_token=stale_token, ahead=ahead):
            state = await load_state(services, connection_id, workspace_id=workspace_id, fresh=True)
        if not force and not _needs_refresh(state, stale_token=stale_token, ahead=ahead):
            return state
        _check_cooldown_and_status(state, await _retry_at(services, connection_id))
        seen = state.access_token

        def done(current: ConnectionState) -> bool:
            # a refresh written by someone else since we looked counts, forced or not
            return current.access_token != seen or (not force and not _needs_refresh(current, stale_token=stale_token, ahead=ahead))

        while not await _take_lease(services, connection_id, rt.owner):
            await asyncio.sleep(POLL_SECONDS)  # another process is refreshing: wait for its token
            state = await load_state(services, connection_id, workspace_id=workspace_id, fresh=True)
            if done(state):
                return state
        try:
            # The lease is ours; a refresh may have been written between our read and the lease.
            state = await load_state(services, connection_id, workspace_id=workspace_id, fresh=True)
            if done(state):
                await _release(services, connection_id, rt.owner)
                return state
            _check_cooldown_and_status(state, await _retry_at(services, connection_id))
            return await _refresh_holding_lease(services, state)
        except BaseException:
            await _release(services, connection_id, rt.owner)
            raise


async def _retry_at(services: Services, connection_id: str):
    async with services.db.session() as session:
        return await session.scalar(Connection.__table__.select().with_only_columns(Connection.refresh_retry_at).where(Connection.id == connection_id))


def _check_cooldown_and_status(state: ConnectionState, retry_at) -> None:
    if state.status == "invalid":
        raise RefreshFailed("the provider refused the connection's credentials; reconnect it", permanent=True)
    if state.status == "disconnected":
        raise RefreshFailed("the connection is disconnected", permanent=True)
    if retry_at is not None and retry_at > utcnow():
        raise RefreshFailed(f"the last refresh failed; next attempt after {retry_at.isoformat()}", cooling_down=True)


async def _take_lease(services: Services, connection_id: str, owner: str) -> bool:
    now = utcnow()
    async with services.db.transaction() as session:
        result = await session.execute(
            update(Connection)
            .where(Connection.id == connection_id, or_(Connection.refresh_lease_until.is_(None), Connection.refresh_lease_until < now))
            .values(refresh_lease_until=now + timedelta(seconds=LEASE_SECONDS), refresh_lease_owner=owner)
            .execution_options(synchronize_session=False)
        )
        return result.rowcount == 1


async def _release(services: Services, connection_id: str, owner: str) -> None:
    async with services.db.transaction() as session:
        await session.execute(
            update(Connection)
            .where(Connection.id == connection_id, Connection.refresh_lease_owner == owner)
            .values(refresh_lease_until=None, refresh_lease_owner=None)
            .execution_options(synchronize_session=False)
        )


async def _refresh_holding_lease(services: Services, state: ConnectionState) -> ConnectionState:
    rt = services.connections
    provider = services.registry.provider(state.provider)
    if provider is None:
        raise RefreshFailed(f"provider {state.provider} is not installed")
    oauth_app = await oauth_app_for(services, workspace_id=state.workspace_id, provider=state.provider, source=state.oauth_app, credentials=state.credentials)
    started = time.perf_counter()
    try:
        ctx = auth_context(services, provider, oauth_app, state.params)
        tokens = await auth_for(services.registry, provider.name).refresh(ctx, state.credentials)
    except ProviderAuthError as error:
        _audit(services, state, provider, started, status=error.status or 0, error=error.message)
        await _record_failure(services, state, error)
        raise RefreshFailed(error.message, permanent=error.permanent) from None
    _audit(services, state, provider, started, status=200)
    now = utcnow()
    credentials = token_credentials(tokens, state.credentials)
    values = {
        "credentials": encrypt_credentials(services, credentials),
        "expires_at": tokens.expires_at,
        "last_refreshed_at": now,
        "status": "connected",
        "refresh_error": None,
        "refresh_retry_at": None,
        "refresh_failures": 0,
        "refresh_lease_until": None,
        "refresh_lease_owner": None,
        "updated_at": now,
    }
    if tokens.scopes:
        values["scopes"] = list(tokens.scopes)
    if tokens.params:
        values["params"] = {**state.params, **tokens.params}
    async with services.db.transaction() as session:
        await session.execute(update(Connection).where(Connection.id == state.id).values(**values).execution_options(synchronize_session=False))
    rt.forget(state.id)
    return await load_state(services, state.id, workspace_id=state.workspace_id, fresh=True)


def _token_path(provider, state: ConnectionState) -> str:
    """The token endpoint's path (its URL may be a template of the connection's parameters)."""
    try:
        url = fill_url(provider.token_url or "", provider, connection_params(provider, state.params))
    except TemplateError:
        url = provider.token_url or ""
    return urlsplit(url).path or "(token endpoint)"


def _audit(services: Services, state: ConnectionState, provider, started: float, *, status: int, error: str | None = None) -> None:
    """The refresh in the proxy's audit (``source`` ``refresh``): the connection's refresh history
    and the token refreshes of the console's Logs. The token endpoint's path, never a token."""
    services.connections.audit.add(
        workspace_id=state.workspace_id,
        connection_id=state.id,
        provider=state.provider,
        source="refresh",
        method="POST",
        path=_token_path(provider, state),
        status=status,
        duration_ms=(time.perf_counter() - started) * 1000,
        error=error[:1000] if error else None,
    )


async def _record_failure(services: Services, state: ConnectionState, error: ProviderAuthError) -> None:
    now = utcnow()
    async with services.db.transaction() as session:
        failures = (await session.scalar(Connection.__table__.select().with_only_columns(Connection.refresh_failures).where(Connection.id == state.id))) or 0
        values = {
            "refresh_error": error.message[:1000],
            "refresh_failures": failures + 1,
            "refresh_lease_until": None,
            "refresh_lease_owner": None,
            "updated_at": now,
        }
        if error.permanent:
            values.update(status="invalid", health="invalid")
            operator_events.connection_invalid(session, state, error.message)
        else:
            values["refresh_retry_at"] = now + timedelta(seconds=min(COOLDOWN_MAX, COOLDOWN_BASE * 2**failures))
            if state.expires_within(0):
                values["status"] = "expired"
        await session.execute(update(Connection).where(Connection.id == state.id).values(**values).execution_options(synchronize_session=False))
    services.connections.forget(state.id)
    log.warning("refresh of connection %s (%s) failed: %s", state.id, state.provider, error.message)
