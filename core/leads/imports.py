"""Lead imports: a backfill of a connection's leads, one page per job, resumable.

Each page is fetched through the provider's ``list_leads`` and stored (deduplicated) in the same
transaction that saves the next cursor and queues the next page, so an interrupted import resumes
at the first page not stored; a page stored twice is impossible (the page counter must still be
the one the job read). ``resume-imports`` re-queues imports that stopped moving.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update

from patchbay.core.awaitables import maybe_await
from patchbay.core.connections.client import open_client
from patchbay.core.connections.models import Connection
from patchbay.core.crm_push.service import schedule_push
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.jobs.queue import JobContext
from patchbay.core.leads.models import LeadImport
from patchbay.core.leads.store import lock_workspace_leads, save_lead
from patchbay.core.services import Services
from patchbay.core.timeutil import iso, utcnow

log = logging.getLogger(__name__)

IMPORT_JOB = "leads.import"
STALE_AFTER = timedelta(minutes=5)


def import_json(row: LeadImport) -> dict[str, Any]:
    return {
        "id": row.id,
        "accountId": row.workspace_id,
        "provider": row.provider,
        "connectionId": row.connection_id,
        "status": row.status,
        "pages": row.pages,
        "imported": row.imported,
        "duplicates": row.duplicates,
        "error": row.error,
        "startedAt": iso(row.created_at),
        "updatedAt": iso(row.updated_at),
        "finishedAt": iso(row.finished_at),
    }


def importable(services: Services, provider: str) -> bool:
    handler = services.registry.get("webhooks", provider)
    return handler is not None and getattr(handler, "supports", lambda _m: False)("list_leads")


def queue_page(services: Services, session, row: LeadImport) -> None:
    services.jobs.enqueue(session, IMPORT_JOB, {"import_id": row.id}, workspace_id=row.workspace_id, dedupe_key=f"{IMPORT_JOB}:{row.id}:{row.pages}")


async def start_imports(services: Services, workspace_id: str, *, connection_id: str | None, provider: str | None) -> list[dict[str, Any]]:
    """Queue an import of each connected connection of the workspace that can import leads (only
    ``connection_id``, only ``provider``'s when given); a connection with an import queued or
    running keeps it. Answers the imports (``import_json``). Raises NotFound for a
    ``connection_id`` that cannot import, Invalid when no connection can."""
    async with services.db.transaction(tenant=workspace_id) as session:
        statement = select(Connection).where(Connection.status == "connected")
        if connection_id:
            statement = statement.where(Connection.id == connection_id)
        if provider:
            statement = statement.where(Connection.provider == provider)
        connections = [c for c in (await session.scalars(statement)).all() if importable(services, c.provider)]
        if connection_id and not connections:
            raise NotFound("Connection not found or its provider cannot import leads")
        if not connections:
            raise Invalid("No connection of this account can import leads")
        started = []
        for connection in connections:
            running = await session.scalar(select(LeadImport).where(LeadImport.connection_id == connection.id, LeadImport.status.in_(("queued", "running"))))
            if running is not None:
                started.append(running)
                continue
            row = LeadImport(provider=connection.provider, connection_id=connection.id, status="queued")
            session.add(row)
            await session.flush()
            queue_page(services, session, row)
            started.append(row)
        return [import_json(row) for row in started]


async def import_status(services: Services, workspace_id: str) -> dict[str, Any]:
    """The latest import of each connection of the workspace, their overall status (``none``,
    ``running``, ``failed``, ``completed``) and the leads imported and found again."""
    latest: dict[str, LeadImport] = {}
    async with services.db.session(tenant=workspace_id) as session:
        for row in (await session.scalars(select(LeadImport).order_by(LeadImport.created_at.desc()))).all():
            latest.setdefault(row.connection_id, row)
    statuses = {row.status for row in latest.values()}
    overall = "none" if not statuses else "running" if statuses & {"queued", "running"} else "failed" if "failed" in statuses else "completed"
    imports = [import_json(row) for row in latest.values()]
    return {"status": overall, "imports": imports, "imported": sum(i["imported"] for i in imports), "duplicates": sum(i["duplicates"] for i in imports)}


async def import_job(context: JobContext) -> None:
    services = context.services
    async with services.db.session() as session:
        row = await session.get(LeadImport, context.payload["import_id"])
        if row is None or row.status in ("completed", "failed"):
            return
        connection = await session.get(Connection, row.connection_id)
    pages_read, cursor = row.pages, (row.cursor or {}).get("value")
    try:
        if connection is None or connection.status != "connected":
            raise RuntimeError("the connection is gone or not connected")
        handler = services.registry.get("webhooks", row.provider)
        client = await open_client(services, workspace_id=row.workspace_id, connection_id=row.connection_id)
        leads, next_cursor = await maybe_await(handler.list_leads(client, dict(connection.meta or {}), cursor))
    except Exception as error:
        if not context.is_last_attempt:
            raise
        async with services.db.transaction(tenant=row.workspace_id) as session:
            row = await session.get(LeadImport, row.id)
            if row is not None and row.pages == pages_read:
                row.status, row.error, row.finished_at = "failed", (str(error) or repr(error))[:2000], utcnow()
        return
    async with services.db.transaction(tenant=row.workspace_id) as session:
        # write first (SQLite's write lock, so the dedupe reads see every committed lead)
        await session.execute(update(LeadImport).where(LeadImport.id == row.id).values(updated_at=utcnow()).execution_options(synchronize_session=False))
        await lock_workspace_leads(session, row.workspace_id)
        row = await session.get(LeadImport, row.id, populate_existing=True)
        if row is None or row.pages != pages_read or row.status in ("completed", "failed"):
            return  # another run stored this page already
        for data in leads:
            lead, created = await save_lead(
                session, workspace_id=row.workspace_id, provider=row.provider, data=data, connection_id=row.connection_id, event_id=None, source="import"
            )
            if created:
                row.imported += 1
                await schedule_push(services, session, lead)
            else:
                row.duplicates += 1
        row.pages += 1
        row.cursor = {"value": next_cursor}
        row.error = None
        if next_cursor is None:
            row.status, row.finished_at = "completed", utcnow()
        else:
            row.status = "running"
            queue_page(services, session, row)


async def resume_imports(services: Services) -> dict[str, Any]:
    """Cron ``resume-imports``: queue the next page of every import that stopped moving."""
    cutoff = utcnow() - STALE_AFTER
    tick = int(time.time() // STALE_AFTER.total_seconds())
    async with services.db.session() as session:
        stale = (await session.scalars(select(LeadImport).where(LeadImport.status.in_(("queued", "running")), LeadImport.updated_at < cutoff))).all()
    resumed = 0
    for row in stale:
        if await services.jobs.enqueue_once(IMPORT_JOB, {"import_id": row.id}, f"{IMPORT_JOB}:{row.id}:{row.pages}:resume:{tick}"):
            resumed += 1
    return {"resumed": resumed}
