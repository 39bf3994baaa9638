"""The periodic jobs of connections (spec 4.22): ``token-refresh`` renews tokens ahead of their
expiry, ``connection-health`` checks connections not checked for a while."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, or_, select

from patchbay.core.connections.models import ACTIVE_STATUSES, Connection, OAuthState
from patchbay.core.connections.refresh import REFRESHABLE_MODES, RefreshFailed, refresh_connection
from patchbay.core.connections.service import check_health
from patchbay.core.jobs.cron import CronJob
from patchbay.core.timeutil import utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

REFRESH_AHEAD = timedelta(minutes=15)
REFRESH_INTERVAL = 300
HEALTH_INTERVAL = 3600
HEALTH_EVERY = timedelta(hours=6)
BATCH = 200
CONCURRENCY = 8


async def _each(items, work) -> list[Any]:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(item):
        async with gate:
            return await work(item)

    return await asyncio.gather(*(one(item) for item in items))


async def refresh_expiring(services: Services) -> dict[str, int]:
    """Refresh every token that expires within ``REFRESH_AHEAD`` and is not cooling down; remove
    the stored states of OAuth logins that expired unfinished."""
    now = utcnow()
    modes = {name for name, p in services.registry.providers.items() if p.auth_mode in REFRESHABLE_MODES and p.refreshes}
    async with services.db.session() as session:
        rows = list(
            await session.execute(
                select(Connection.id, Connection.workspace_id, Connection.provider)
                .where(
                    Connection.status.in_(ACTIVE_STATUSES),
                    Connection.expires_at.is_not(None),
                    Connection.expires_at < now + REFRESH_AHEAD,
                    or_(Connection.refresh_retry_at.is_(None), Connection.refresh_retry_at < now),
                )
                .order_by(Connection.expires_at)
                .limit(BATCH)
            )
        )
    rows = [row for row in rows if row.provider in modes]
    summary = {"due": len(rows), "refreshed": 0, "failed": 0, "invalid": 0}

    async def work(row) -> None:
        try:
            await refresh_connection(services, row.id, workspace_id=row.workspace_id, ahead=REFRESH_AHEAD.total_seconds())
            summary["refreshed"] += 1
        except RefreshFailed as error:
            summary["invalid" if error.permanent else "failed"] += 1
        except Exception:
            log.exception("refreshing connection %s failed", row.id)
            summary["failed"] += 1

    await _each(rows, work)
    async with services.db.transaction() as session:  # logins abandoned before their callback
        removed = await session.execute(delete(OAuthState).where(OAuthState.expires_at < now).execution_options(synchronize_session=False))
    summary["expiredLogins"] = removed.rowcount or 0
    return summary


async def check_connections(services: Services) -> dict[str, int]:
    """Check the health of connections not checked within ``HEALTH_EVERY``; invalid ones are
    reported (log warning and the summary)."""
    now = utcnow()
    async with services.db.session() as session:
        rows = list(
            await session.execute(
                select(Connection.id, Connection.workspace_id)
                .where(
                    Connection.status != "disconnected", or_(Connection.last_health_check_at.is_(None), Connection.last_health_check_at < now - HEALTH_EVERY)
                )
                .order_by(Connection.last_health_check_at.nulls_first())
                .limit(BATCH)
            )
        )
    summary: dict[str, int] = {"checked": 0}

    async def work(row) -> None:
        try:
            result = await check_health(services, workspace_id=row.workspace_id, connection_id=row.id)
        except Exception:
            log.exception("health check of connection %s failed", row.id)
            return
        summary["checked"] += 1
        summary[result["health"]] = summary.get(result["health"], 0) + 1
        if result["health"] in ("invalid", "unhealthy"):
            log.warning("connection %s (%s) of workspace %s is %s: %s", row.id, result["provider"], row.workspace_id, result["health"], result["detail"])

    await _each(rows, work)
    return summary


def cron_jobs() -> list[CronJob]:
    return [CronJob("token-refresh", REFRESH_INTERVAL, refresh_expiring), CronJob("connection-health", HEALTH_INTERVAL, check_connections)]
