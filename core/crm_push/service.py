"""CRM destinations of a workspace, scheduling pushes, the push job, and testing destinations.

A destination is a connection of the workspace whose provider has a registered CRM destination
plugin; each lead gets one :class:`LeadSync` per destination, and the lead's ``crm_sync_status``
sums them up (``synced`` when every destination has it, ``failed`` when one refused it).
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from aiohttp import web
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.appkeys import DB, JOBS, REGISTRY, SETTINGS
from patchbay.core.connections.models import Connection
from patchbay.core.jobs.queue import JobContext
from patchbay.core.leads.models import Lead, LeadSync
from patchbay.core.leads.service import destination_lead
from patchbay.core.timeutil import utcnow

log = logging.getLogger(__name__)

PUSH_JOB = "crm.push"


async def maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def open_connection_client(app: web.Application, *, workspace_id: str, connection_id: str) -> Any:
    """The connections feature's client of one connection (credentials injected, refreshed)."""
    from patchbay.core.connections.client import open_client

    return await maybe_await(open_client(app, workspace_id=workspace_id, connection_id=connection_id))


async def destinations(app: web.Application, session: AsyncSession, workspace_id: str) -> list[Connection]:
    names = list(app[REGISTRY].objects("crm_destinations"))
    if not names:
        return []
    statement = (
        select(Connection)
        .where(Connection.workspace_id == workspace_id, Connection.provider.in_(names), Connection.status == "connected")
        .order_by(Connection.created_at)
    )
    return list((await session.scalars(statement)).all())


async def schedule_push(app: web.Application, session: AsyncSession, lead: Lead, *, only_failed: bool = False) -> int:
    """Queue a push of ``lead`` to every destination of its workspace (those not synced yet; with
    ``only_failed`` only those that failed); answers how many pushes were queued."""
    targets = await destinations(app, session, lead.workspace_id)
    existing = {s.connection_id: s for s in (await session.scalars(select(LeadSync).where(LeadSync.lead_id == lead.id))).all()}
    queued = 0
    for connection in targets:
        sync = existing.get(connection.id)
        if sync is None:
            if only_failed:
                continue
            sync = LeadSync(workspace_id=lead.workspace_id, lead_id=lead.id, connection_id=connection.id, provider=connection.provider)
            session.add(sync)
            await session.flush()
        elif sync.status == "synced" or (only_failed and sync.status != "failed"):
            continue
        sync.status = "pending"
        app[JOBS].enqueue(session, PUSH_JOB, {"sync_id": sync.id}, workspace_id=lead.workspace_id)
        queued += 1
    await refresh_status(session, lead)
    return queued


async def refresh_status(session: AsyncSession, lead: Lead) -> None:
    statuses = set((await session.scalars(select(LeadSync.status).where(LeadSync.lead_id == lead.id))).all())
    if not statuses:
        lead.crm_sync_status = "none"
    elif "failed" in statuses:
        lead.crm_sync_status = "failed"
    elif statuses == {"synced"}:
        lead.crm_sync_status = "synced"
    else:
        lead.crm_sync_status = "pending"


async def push_job(context: JobContext) -> None:
    """Push one lead to one destination and record the outcome; a failure is recorded, not raised:
    ``retry-failed-syncs`` tries it again later."""
    app = context.app
    async with app[DB].session() as session:
        sync = await session.get(LeadSync, context.payload["sync_id"])
        if sync is None or sync.status == "synced":
            return
        lead = await session.get(Lead, sync.lead_id)
        workspace_id, connection_id, provider = sync.workspace_id, sync.connection_id, sync.provider
    if lead is None:
        return
    destination = app[REGISTRY].get("crm_destinations", provider)
    external_id, error = None, None
    try:
        if destination is None:
            raise RuntimeError(f"no CRM destination is installed for {provider}")
        client = await open_connection_client(app, workspace_id=workspace_id, connection_id=connection_id)
        external_id = await maybe_await(destination.push(client, destination_lead(lead)))
    except Exception as exc:  # the destination's failure is data: recorded on the sync
        log.info("pushing lead %s to %s failed: %r", lead.id, provider, exc)
        error = str(exc) or repr(exc)
    async with app[DB].transaction(tenant=workspace_id) as session:
        sync = await session.get(LeadSync, context.payload["sync_id"])
        lead = await session.get(Lead, sync.lead_id) if sync is not None else None
        if sync is None or lead is None:
            return
        sync.attempts += 1
        sync.last_attempt_at = utcnow()
        if error is None:
            sync.status, sync.external_id, sync.error = "synced", str(external_id) if external_id is not None else None, None
        else:
            sync.status, sync.error = "failed", error[:2000]
        await session.flush()
        await refresh_status(session, lead)


async def test_destinations(app: web.Application, workspace_id: str) -> list[dict[str, Any]]:
    async with app[DB].session(tenant=workspace_id) as session:
        targets = await destinations(app, session, workspace_id)
    results = []
    for connection in targets:
        destination = app[REGISTRY].get("crm_destinations", connection.provider)
        result: dict[str, Any] = {"connectionId": connection.id, "provider": connection.provider, "ok": True, "error": None}
        try:
            client = await open_connection_client(app, workspace_id=workspace_id, connection_id=connection.id)
            detail = await maybe_await(destination.test(client))
            if detail not in (None, True):
                result["detail"] = detail
        except Exception as exc:
            result.update(ok=False, error=str(exc) or repr(exc))
        results.append(result)
    return results


async def retry_failed_syncs(app: web.Application) -> dict[str, Any]:
    """Cron ``retry-failed-syncs``: queue again every failed sync with attempts left."""
    max_attempts = app[SETTINGS].webhooks.crm_sync_max_attempts
    queued = 0
    async with app[DB].transaction() as session:
        syncs = (await session.scalars(select(LeadSync).where(LeadSync.status == "failed", LeadSync.attempts < max_attempts).limit(500))).all()
        for sync in syncs:
            sync.status = "pending"
            app[JOBS].enqueue(session, PUSH_JOB, {"sync_id": sync.id}, workspace_id=sync.workspace_id)
            queued += 1
        lead_ids = {sync.lead_id for sync in syncs}
        for lead in (await session.scalars(select(Lead).where(Lead.id.in_(lead_ids)))).all() if lead_ids else ():
            await refresh_status(session, lead)
    return {"queued": queued}
