"""The data-sync job (4.22 ``/api/cron/data-sync``): ingest provider records incrementally.

Every tick enqueues one ``records.sync`` job per active connection whose provider registered record
sources (``register_record_sources``). The job runs each source of the provider from the cursor
stored for (connection, resource type): ``fetch(client, cursor)`` answers ``(records, next_cursor)``;
the records are stored (updated by their ``id``), then the new cursor, in one transaction, so a crash
never skips records and a repeat only rewrites what it already had. A run fetches at most
``MAX_PAGES`` pages per source and stops early when a page is empty or the cursor stops moving; a
``None`` cursor means "nothing more now" and the previous cursor is kept for the next run.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from patchbay.core.connections.models import ACTIVE_STATUSES, Connection
from patchbay.core.jobs.cron import CronJob
from patchbay.core.jobs.queue import JobContext
from patchbay.core.records.models import RecordSyncCursor
from patchbay.core.records.service import external_id_of, store_records
from patchbay.core.timeutil import utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

JOB_KIND = "records.sync"
INTERVAL_SECONDS = 15 * 60
MAX_PAGES = 20


async def schedule_syncs(services: Services) -> dict[str, Any]:
    """Enqueue a sync of every active connection of a provider with record sources."""
    sources = services.registry.objects("record_sources")
    if not sources:
        return {"connections": 0}
    async with services.db.session() as session:
        rows = (
            await session.execute(
                select(Connection.id, Connection.workspace_id).where(Connection.provider.in_(list(sources)), Connection.status.in_(ACTIVE_STATUSES))
            )
        ).all()
    tick = int(utcnow().timestamp() // INTERVAL_SECONDS)
    enqueued = 0
    for connection_id, workspace_id in rows:
        payload = {"connection_id": connection_id, "workspace_id": workspace_id}
        if await services.jobs.enqueue_once(JOB_KIND, payload, f"{JOB_KIND}:{connection_id}:{tick}"):
            enqueued += 1
    return {"connections": len(rows), "enqueued": enqueued}


async def sync_connection(services: Services, *, workspace_id: str, connection_id: str) -> dict[str, int]:
    """Run every record source of the connection's provider; answers records stored per resource."""
    from patchbay.core.connections.client import open_client

    async with services.db.session(tenant=workspace_id) as session:
        connection = await session.get(Connection, connection_id)
    if connection is None or connection.status not in ACTIVE_STATUSES:
        return {}
    sources = services.registry.get("record_sources", connection.provider) or {}
    client = await open_client(services, workspace_id=workspace_id, connection_id=connection_id, source="data-sync")
    stored: dict[str, int] = {}
    for resource_type, source in sources.items():
        try:
            stored[resource_type] = await _sync_source(services, client, connection, resource_type, source)
        except Exception as error:  # one failing source must not stop the others; its error is kept
            log.warning("data sync of %s %s (%s) failed: %r", connection.provider, resource_type, connection_id, error)
            await _save_error(services, connection, resource_type, f"{type(error).__name__}: {error}"[:2000])
    return stored


async def _cursor_row(session, connection: Connection, resource_type: str) -> RecordSyncCursor:
    row = await session.scalar(select(RecordSyncCursor).where(RecordSyncCursor.connection_id == connection.id, RecordSyncCursor.resource_type == resource_type))
    if row is None:
        row = RecordSyncCursor(workspace_id=connection.workspace_id, connection_id=connection.id, resource_type=resource_type, records_synced=0)
        session.add(row)
    return row


async def _sync_source(services: Services, client: Any, connection: Connection, resource_type: str, source: Any) -> int:
    db = services.db
    async with db.session(tenant=connection.workspace_id) as session:
        row = await session.scalar(
            select(RecordSyncCursor).where(RecordSyncCursor.connection_id == connection.id, RecordSyncCursor.resource_type == resource_type)
        )
        cursor = json.loads(row.cursor) if row is not None and row.cursor is not None else None
    total = 0
    for _ in range(MAX_PAGES):
        records, next_cursor = await source.fetch(client, cursor)
        items = [(external_id_of(record.get("id")), dict(record)) for record in records or [] if isinstance(record, dict)]
        async with db.transaction(tenant=connection.workspace_id) as session:
            if items:
                await store_records(
                    session,
                    workspace_id=connection.workspace_id,
                    provider_type=connection.provider,
                    resource_type=resource_type,
                    items=items,
                    source="sync",
                    connection_id=connection.id,
                )
            row = await _cursor_row(session, connection, resource_type)
            if next_cursor is not None:
                row.cursor = json.dumps(next_cursor)
            row.last_synced_at = utcnow()
            row.last_error = None
            row.records_synced = (row.records_synced or 0) + len(items)
        total += len(items)
        if not items or next_cursor is None or next_cursor == cursor:
            break
        cursor = next_cursor
    return total


async def _save_error(services: Services, connection: Connection, resource_type: str, message: str) -> None:
    async with services.db.transaction(tenant=connection.workspace_id) as session:
        row = await _cursor_row(session, connection, resource_type)
        row.last_error = message


async def _handle(context: JobContext) -> None:
    await sync_connection(context.services, workspace_id=context.payload["workspace_id"], connection_id=context.payload["connection_id"])


def install(services: Services) -> None:
    services.jobs.register(JOB_KIND, _handle, max_attempts=3)
    services.cron.add(CronJob("data-sync", INTERVAL_SECONDS, schedule_syncs))
