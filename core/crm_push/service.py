"""CRM destinations of a workspace, scheduling pushes, the push job, the ``retry-failed-syncs`` cron
job, and testing destinations.

A destination is a connection of the workspace whose provider has a registered CRM destination
plugin; each lead gets one :class:`LeadSync` per destination, and the lead's ``crm_sync_status``
sums them up (``synced`` when every destination has it, ``failed`` when one refused it).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.awaitables import maybe_await
from patchbay.core.connections.client import open_client
from patchbay.core.connections.models import Connection
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.jobs.cron import CronJob
from patchbay.core.jobs.queue import JobContext
from patchbay.core.leads.models import Lead, LeadSync
from patchbay.core.leads.store import destination_lead
from patchbay.core.services import Services
from patchbay.core.timeutil import new_id, utcnow

log = logging.getLogger(__name__)

PUSH_JOB = "crm.push"
#: a sync ``pushing`` for longer than this was abandoned by a worker that died; it may be taken again
PUSH_LEASE = timedelta(minutes=10)


def install(services: Services) -> None:
    services.jobs.register(PUSH_JOB, push_job, max_attempts=1)
    services.cron.add(CronJob("retry-failed-syncs", 300, retry_failed_syncs))


async def push_lead(services: Services, workspace_id: str, lead_id: str) -> tuple[Lead, int]:
    """Queue the push of the workspace's lead to its destinations: the lead and how many pushes
    were queued. NotFound for another workspace's lead, Invalid when no destination is connected."""
    async with services.db.transaction(tenant=workspace_id) as session:
        lead = await session.get(Lead, lead_id)
        if lead is None:
            raise NotFound("Lead not found")
        if not await destinations(services, session, workspace_id):
            raise Invalid("No CRM destination is connected")
        return lead, await schedule_push(services, session, lead)


async def push_leads(services: Services, workspace_id: str, *, lead_ids: list[str] | None, statuses: list[str], limit: int) -> tuple[int, int]:
    """Queue the pushes of the workspace's leads (:func:`leads_to_push`): how many leads, and how
    many pushes were queued. Invalid when no destination is connected."""
    async with services.db.transaction(tenant=workspace_id) as session:
        if not await destinations(services, session, workspace_id):
            raise Invalid("No CRM destination is connected")
        leads = await leads_to_push(session, lead_ids=lead_ids, statuses=statuses, limit=limit)
        queued = 0
        for lead in leads:
            queued += await schedule_push(services, session, lead)
    return len(leads), queued


async def leads_to_push(session: AsyncSession, *, lead_ids: list[str] | None, statuses: list[str], limit: int) -> list[Lead]:
    """The session workspace's leads named by ``lead_ids``, or else those in one of ``statuses``,
    oldest first, at most ``limit``."""
    statement = select(Lead).order_by(Lead.created_at).limit(limit)
    statement = statement.where(Lead.id.in_(lead_ids)) if lead_ids is not None else statement.where(Lead.crm_sync_status.in_(statuses))
    return list((await session.scalars(statement)).all())


async def destinations(services: Services, session: AsyncSession, workspace_id: str) -> list[Connection]:
    names = list(services.registry.objects("crm_destinations"))
    if not names:
        return []
    statement = (
        select(Connection)
        .where(Connection.workspace_id == workspace_id, Connection.provider.in_(names), Connection.status == "connected")
        .order_by(Connection.created_at)
    )
    return list((await session.scalars(statement)).all())


async def schedule_push(services: Services, session: AsyncSession, lead: Lead, *, only_failed: bool = False) -> int:
    """Queue a push of ``lead`` to every destination of its workspace that has no push queued, in
    flight or done (with ``only_failed`` only those that failed); answers how many were queued.

    Each step is a conditional write (a new sync inserted unless one exists, a failed one moved to
    pending only if it is still failed), so concurrent callers (retry-sync, push-batch, the cron,
    new events) queue one push per lead and destination between them."""
    targets = await destinations(services, session, lead.workspace_id)
    existing = {s.connection_id: s.status for s in (await session.scalars(select(LeadSync).where(LeadSync.lead_id == lead.id))).all()}
    queued = 0
    for connection in targets:
        status = existing.get(connection.id)
        if status is None and not only_failed:
            sync_id = await _insert_sync(services, session, lead, connection)
        elif status != "synced":
            sync_id = await _requeue(session, connection.id, lead.id)
        else:
            continue
        if sync_id is not None:
            services.jobs.enqueue(session, PUSH_JOB, {"sync_id": sync_id}, workspace_id=lead.workspace_id)
            queued += 1
    await refresh_status(session, lead)
    return queued


async def _insert_sync(services: Services, session: AsyncSession, lead: Lead, connection: Connection) -> str | None:
    now = utcnow()
    insert = postgresql.insert if services.db.is_postgres else sqlite.insert
    statement = (
        insert(LeadSync.__table__)
        .values(
            id=new_id(),
            workspace_id=lead.workspace_id,
            lead_id=lead.id,
            connection_id=connection.id,
            provider=connection.provider,
            status="pending",
            attempts=0,
            created_at=now,
            updated_at=now,
        )
        .on_conflict_do_nothing(index_elements=["lead_id", "connection_id"])
        .returning(LeadSync.__table__.c.id)
    )
    return await session.scalar(statement)


def _requeueable(now):
    """Syncs to queue again: failed ones, and pending or pushing ones left for longer than
    ``PUSH_LEASE`` (their job or worker died); a second job for a live one only fails to claim it."""
    table = LeadSync.__table__
    return or_(table.c.status == "failed", and_(table.c.status.in_(("pending", "pushing")), table.c.updated_at < now - PUSH_LEASE))


async def _requeue(session: AsyncSession, connection_id: str, lead_id: str) -> str | None:
    """Move the sync back to pending if it may be queued again (:func:`_requeueable`), in one
    conditional UPDATE; its id when it was moved."""
    table = LeadSync.__table__
    now = utcnow()
    statement = (
        update(table)
        .where(table.c.lead_id == lead_id, table.c.connection_id == connection_id, _requeueable(now))
        .values(status="pending", updated_at=now)
        .returning(table.c.id)
    )
    return await session.scalar(statement)


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
    services = context.services
    if not await _claim(services, context.payload["sync_id"]):
        return  # pushed, in flight elsewhere, or no longer wanted
    async with services.db.session() as session:
        sync = await session.get(LeadSync, context.payload["sync_id"])
        if sync is None:
            return
        lead = await session.get(Lead, sync.lead_id)
        workspace_id, connection_id, provider = sync.workspace_id, sync.connection_id, sync.provider
    if lead is None:
        return
    destination = services.registry.get("crm_destinations", provider)
    external_id, error = None, None
    try:
        if destination is None:
            raise RuntimeError(f"no CRM destination is installed for {provider}")
        client = await open_client(services, workspace_id=workspace_id, connection_id=connection_id)
        external_id = await maybe_await(destination.push(client, destination_lead(lead)))
    except Exception as exc:  # the destination's failure is data: recorded on the sync
        log.info("pushing lead %s to %s failed: %r", lead.id, provider, exc)
        error = str(exc) or repr(exc)
    async with services.db.transaction(tenant=workspace_id) as session:
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


async def _claim(services: Services, sync_id: str) -> bool:
    """Take the sync for this push (pending -> pushing) so no other job pushes it too. A push whose
    worker died is taken again after ``PUSH_LEASE``."""
    table = LeadSync.__table__
    now = utcnow()
    abandoned = and_(table.c.status == "pushing", table.c.updated_at < now - PUSH_LEASE)
    statement = update(table).where(table.c.id == sync_id, or_(table.c.status == "pending", abandoned)).values(status="pushing", updated_at=now)
    async with services.db.transaction() as session:
        return (await session.execute(statement)).rowcount == 1


async def test_destinations(services: Services, workspace_id: str) -> list[dict[str, Any]]:
    """Each destination's answer to a check of its credentials: ``{connectionId, provider, ok,
    error}``, with ``detail`` when the destination reported more than success."""
    async with services.db.session(tenant=workspace_id) as session:
        targets = await destinations(services, session, workspace_id)
    results = []
    for connection in targets:
        destination = services.registry.get("crm_destinations", connection.provider)
        result: dict[str, Any] = {"connectionId": connection.id, "provider": connection.provider, "ok": True, "error": None}
        try:
            client = await open_client(services, workspace_id=workspace_id, connection_id=connection.id)
            detail = await maybe_await(destination.test(client))
            if detail not in (None, True):
                result["detail"] = detail
        except Exception as exc:
            result.update(ok=False, error=str(exc) or repr(exc))
        results.append(result)
    return results


async def retry_failed_syncs(services: Services) -> dict[str, Any]:
    """Cron ``retry-failed-syncs``: queue again every failed sync with attempts left, and every
    push abandoned by a job or worker that died."""
    max_attempts = services.settings.webhooks.crm_sync_max_attempts
    queued = 0
    async with services.db.transaction() as session:
        due = select(LeadSync).where(_requeueable(utcnow()), LeadSync.attempts < max_attempts).limit(500)
        syncs = (await session.scalars(due)).all()
        for sync in syncs:
            if await _requeue(session, sync.connection_id, sync.lead_id) is not None:
                services.jobs.enqueue(session, PUSH_JOB, {"sync_id": sync.id}, workspace_id=sync.workspace_id)
                queued += 1
        lead_ids = {sync.lead_id for sync in syncs}
        for lead in (await session.scalars(select(Lead).where(Lead.id.in_(lead_ids)))).all() if lead_ids else ():
            await refresh_status(session, lead)
    return {"queued": queued}
