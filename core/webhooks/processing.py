"""Processing of stored inbound events, after the 200 (spec 6.2, contract section 7).

A batch job per ingest commit processes its events: the common ones in one pass (see ``batch``),
the rest one by one, as described here. For each: drop a delivery that was
received before (DUPLICATE: the same body, or an event whose provider event id the workspace has
processed already; it is neither forwarded nor shown to flows), parse the body, split it into the provider events it carries, route
each to a workspace (``?connectionId=`` or the provider's routing keys against connection
metadata), fetch and store the lead it announces (a person the workspace knows already has their lead
updated, never a second lead; the event is forwarded like any other), then, in one transaction: record the outcome,
queue the forwarding to the workspace's subscriptions, call the listeners (flow triggers) and queue
the CRM pushes. The outcome is written only while the event is still RECEIVED, so a job that runs
twice after a crash changes nothing the second time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from patchbay.core.awaitables import maybe_await
from patchbay.core.connections.client import open_client
from patchbay.core.connections.models import Connection
from patchbay.core.crm_push.service import schedule_push
from patchbay.core.jobs.queue import JobContext
from patchbay.core.leads.store import lead_json, lock_workspace_leads, merge_lead, save_lead
from patchbay.core.services import Services
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks.batch import process_batch
from patchbay.core.webhooks.delivery import create_deliveries
from patchbay.core.webhooks.models import WebhookEvent
from patchbay.core.webhooks.protocol import InboundEvent, WebhookHandler

log = logging.getLogger(__name__)

ROUTABLE_STATUSES = ("connected", "expired", "invalid")


class _AlreadyProcessed(Exception):
    """Another run recorded this event's outcome first; roll this run back."""


#: events of one batch processed at once (their provider calls overlap; each has its own transaction)
BATCH_CONCURRENCY = 8


class TransientProcessingError(Exception):
    """Some events of a batch met a passing failure (the database or network); the job retries them."""


def is_transient(error: BaseException) -> bool:
    """A failure that says nothing about the event: the database or the network, worth a retry."""
    if isinstance(error, DBAPIError):
        return isinstance(error, OperationalError | InterfaceError) or error.connection_invalidated
    return isinstance(error, ConnectionError | TimeoutError)


async def process_job(context: JobContext) -> dict[str, Any]:
    """Process a batch: first in one pass (``batch``), then one by one what that pass leaves over
    (or the whole batch, if its transaction failed). An event whose processing raises is FAILED with
    the error as its reason, except for transient errors: those leave it RECEIVED and the job
    retries (on its last attempt they fail it too), so an event never waits on a retry for an error
    that will not pass."""
    event_ids = list(context.payload.get("event_ids", ()))
    final = context.is_last_attempt
    try:
        left = await process_batch(context.services, event_ids)
    except Exception as error:
        if not final and is_transient(error):
            raise TransientProcessingError(f"the batch of {len(event_ids)} events will be retried: {error!r}") from error
        log.warning("processing %d inbound events in one pass failed; processing them one by one: %r", len(event_ids), error)
        left = event_ids
    slots = asyncio.Semaphore(BATCH_CONCURRENCY)

    async def one(event_id: str) -> None:
        async with slots:
            await process_event(context.services, event_id, retry_transient=not final)

    outcomes = await asyncio.gather(*(one(event_id) for event_id in left), return_exceptions=True)
    transient = [error for error in outcomes if isinstance(error, BaseException)]
    if transient:
        raise TransientProcessingError(f"{len(transient)} of {len(left)} events will be retried: {transient[0]!r}") from transient[0]
    return {"processed": len(event_ids), "one_by_one": len(left)}


async def process_event(services: Services, event_id: str, *, retry_transient: bool = False) -> None:
    async with services.db.session() as session:
        event = await session.get(WebhookEvent, event_id)
    if event is None:
        return
    handler = services.registry.get("webhooks", event.provider)
    if event.status == "RECEIVED":
        async with _failing_on_error(services, event.id, retry_transient):
            await _process_root(services, handler, event)
    async with services.db.session() as session:
        children = (await session.scalars(select(WebhookEvent).where(WebhookEvent.parent_id == event_id, WebhookEvent.status == "RECEIVED"))).all()
    for child in children:
        item = InboundEvent(type=child.event_type or "unknown", data=child.payload or {}, external_id=child.external_id)
        async with _failing_on_error(services, child.id, retry_transient):
            await _process_item(services, handler, child, item)


@contextlib.asynccontextmanager
async def _failing_on_error(services: Services, event_id: str, retry_transient: bool):
    try:
        yield
    except Exception as error:
        if retry_transient and is_transient(error):
            log.warning("processing inbound event %s met a transient error; it will be retried: %r", event_id, error)
            raise
        log.exception("processing inbound event %s failed", event_id)
        await _fail(services, event_id, f"processing error: {error!r}"[:2000])


async def _process_root(services: Services, handler: WebhookHandler | None, event: WebhookEvent) -> None:
    earlier = await _earlier_copy(services, event)
    if handler is None:
        await _fail(services, event.id, f"no webhook handler is installed for provider {event.provider}")
        return
    try:
        payload, parsed = handler.payload(event.body or ""), True
    except (ValueError, TypeError):
        payload, parsed = None, False
    items = list(await maybe_await(handler.typed_events(payload, event.event_type))) if parsed else []
    if earlier is not None:
        await _finish_duplicate(services, handler, event, items, earlier.id)
        return
    if not parsed:
        await _fail(services, event.id, "the body is not valid JSON")
        return
    if not items:
        await _fail(services, event.id, "the body carries no event", payload=payload if isinstance(payload, dict) else {"body": payload})
        return
    if len(items) > 1:
        await _split(services, event, items[1:])
    await _process_item(services, handler, event, items[0])


async def _finish_duplicate(services: Services, handler: WebhookHandler, event: WebhookEvent, items: list[InboundEvent], original: str) -> None:
    """A delivery received before: nothing is created or forwarded; routed (by its first event)
    only so that it shows in the owning workspace's log."""
    values: dict[str, Any] = {}
    if items:
        connection, _ = await route(services, handler, event, items[0])
        values = {"event_type": items[0].type, "payload": dict(items[0].data), "external_id": items[0].external_id}
        if connection is not None:
            values.update(workspace_id=connection.workspace_id, connection_id=connection.id)
    await _finish_unrouted(services, event.id, "DUPLICATE", f"the same delivery was received before as event {original}", **values)


async def _earlier_copy(services: Services, event: WebhookEvent):
    """The first event received with the same body, if it is not this one."""
    if not event.body_hash:
        return None
    statement = (
        select(WebhookEvent.id)
        .where(
            WebhookEvent.provider == event.provider,
            WebhookEvent.body_hash == event.body_hash,
            WebhookEvent.parent_id.is_(None),
            WebhookEvent.id != event.id,
            or_(WebhookEvent.created_at < event.created_at, and_(WebhookEvent.created_at == event.created_at, WebhookEvent.id < event.id)),
        )
        .order_by(WebhookEvent.created_at, WebhookEvent.id)
        .limit(1)
    )
    async with services.db.session() as session:
        return (await session.execute(statement)).first()


async def _split(services: Services, event: WebhookEvent, items: list[InboundEvent]) -> None:
    """Store the body's other events as children (ids derived from the parent: idempotent)."""
    now = utcnow()
    rows = [
        {
            "id": str(uuid.uuid5(uuid.UUID(event.id), str(index))),
            "provider": event.provider,
            "status": "RECEIVED",
            "event_type": item.type,
            "payload": dict(item.data),
            "external_id": item.external_id,
            "parent_id": event.id,
            "connection_hint": event.connection_hint,
            "created_at": now,
            "updated_at": now,
        }
        for index, item in enumerate(items, start=1)
    ]
    insert = postgresql.insert if services.db.is_postgres else sqlite.insert
    async with services.db.transaction() as session:
        await session.execute(insert(WebhookEvent).values(rows).on_conflict_do_nothing(index_elements=["id"]))


async def route(services: Services, handler: WebhookHandler | None, event: WebhookEvent, item: InboundEvent) -> tuple[Connection | None, str]:
    """The connection (so the workspace) an event belongs to, or ``(None, reason)``."""
    async with services.db.session() as session:
        if event.connection_hint:
            connection = await session.get(Connection, event.connection_hint)
            if connection is None or connection.provider != event.provider or connection.status not in ROUTABLE_STATUSES:
                return None, f"connectionId {event.connection_hint} is not a connection of provider {event.provider}"
            return connection, ""
        keys = list(await maybe_await(handler.routing_keys(item))) if handler is not None else []
        if not keys:
            return None, "no connection matches: the event carries no routing key and no connectionId was given"
        for key, value in keys:
            statement = (
                select(Connection)
                .where(Connection.provider == event.provider, Connection.status.in_(ROUTABLE_STATUSES), Connection.meta[key].as_string() == str(value))
                .order_by(Connection.created_at.desc())
            )
            matches = list((await session.scalars(statement)).all())
            workspaces = {connection.workspace_id for connection in matches}
            if len(workspaces) > 1:
                return None, f"{key}={value} matches connections of {len(workspaces)} workspaces; refusing to guess"
            if matches:
                return matches[0], ""
        described = ", ".join(f"{key}={value}" for key, value in keys)
        return None, f"no connection matches {described}"


async def _process_item(services: Services, handler: WebhookHandler | None, event: WebhookEvent, item: InboundEvent) -> None:
    connection, reason = await route(services, handler, event, item)
    base = {"event_type": item.type, "payload": dict(item.data), "external_id": item.external_id}
    if connection is None:
        await _finish_unrouted(services, event.id, "FAILED", reason, **base)
        return
    workspace_id = connection.workspace_id
    lead_ref = handler.lead_ref(item) if handler is not None else None
    lead_data, lead_error = None, None
    repeated = await _repeat_of(services, event, workspace_id, item.external_id)
    if lead_ref and repeated is None:
        try:
            client = await open_client(services, workspace_id=workspace_id, connection_id=connection.id)
            lead_data = await maybe_await(handler.fetch_lead(client, item))
        except Exception as error:
            lead_error = f"lead extraction failed: {error}"[:2000]
    try:
        async with services.db.transaction() as session:
            # Claim first: the write takes SQLite's write lock (so the reads below see every
            # committed lead and event) and the row lock on PostgreSQL; a second run finds nothing
            # to claim. The workspace's lead lock serialises concurrent copies of one event.
            claimed = await session.execute(
                update(WebhookEvent)
                .where(WebhookEvent.id == event.id, WebhookEvent.status == "RECEIVED")
                .values(status="PROCESSED", workspace_id=workspace_id, connection_id=connection.id, processed_at=utcnow(), updated_at=utcnow())
                .execution_options(synchronize_session=False)
            )
            if claimed.rowcount != 1:
                raise _AlreadyProcessed
            if item.external_id or lead_data is not None:
                await lock_workspace_leads(session, workspace_id)
            repeated = await _repeat_of(services, event, workspace_id, item.external_id, session=session)
            lead, created = None, False
            if repeated is not None:
                status, reason = "DUPLICATE", f"the same provider event ({item.external_id}) was received before as event {repeated}"
            else:
                if lead_data is not None:
                    lead, created = await save_lead(
                        session,
                        workspace_id=workspace_id,
                        provider=event.provider,
                        data=lead_data,
                        connection_id=connection.id,
                        event_id=event.id,
                        source="webhook",
                    )
                    if not created:  # a new event about a person the workspace knows: update, do not duplicate
                        merge_lead(lead, lead_data)
                        await session.flush()
                status, reason = ("FAILED", lead_error) if lead_error else ("PROCESSED", None)
            payload = dict(base["payload"])
            if lead is not None:
                payload["lead"] = lead_json(lead)
            await session.execute(
                update(WebhookEvent)
                .where(WebhookEvent.id == event.id)
                .values(
                    status=status,
                    reason=reason,
                    event_type=base["event_type"],
                    payload=payload,
                    external_id=base["external_id"],
                    lead_id=(lead.id if lead is not None else None),
                )
                .execution_options(synchronize_session=False)
            )
            if status != "DUPLICATE":
                stored = await session.get(WebhookEvent, event.id, populate_existing=True)
                await create_deliveries(services.jobs, session, stored)
                await services.webhook_listeners.notify(session, stored)
            if created:
                await schedule_push(services, session, lead)
    except _AlreadyProcessed:
        return


async def _repeat_of(services: Services, event: WebhookEvent, workspace_id: str, external_id: str | None, *, session=None) -> str | None:
    """The id of an earlier event of the workspace with the same provider event id, already
    processed (forwarded or failed): this event is a repeated delivery of it."""
    if not external_id:
        return None
    statement = (
        select(WebhookEvent.id)
        .where(
            WebhookEvent.provider == event.provider,
            WebhookEvent.workspace_id == workspace_id,
            WebhookEvent.external_id == external_id,
            WebhookEvent.id != event.id,
            WebhookEvent.status.in_(("PROCESSED", "FAILED")),
        )
        .limit(1)
    )
    if session is not None:
        return await session.scalar(statement)
    async with services.db.session() as own:
        return await own.scalar(statement)


async def _finish_unrouted(services: Services, event_id: str, status: str, reason: str, **values: Any) -> None:
    async with services.db.transaction() as session:
        await session.execute(
            update(WebhookEvent)
            .where(WebhookEvent.id == event_id, WebhookEvent.status == "RECEIVED")
            .values(status=status, reason=reason, processed_at=utcnow(), updated_at=utcnow(), **values)
            .execution_options(synchronize_session=False)
        )


async def _fail(services: Services, event_id: str, reason: str, **values: Any) -> None:
    await _finish_unrouted(services, event_id, "FAILED", reason, **values)
