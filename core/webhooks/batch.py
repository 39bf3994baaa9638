"""Processing a batch of stored inbound events in one pass (the fast path of ``processing``).

The common event — received once, one provider event in the body, routed by its routing keys or
``?connectionId=`` — is handled for the whole batch at once: the events are read in one query,
earlier copies looked up in one query, routed with one query per routing-key name, their leads
fetched concurrently, and then one transaction claims them (only while still RECEIVED), writes their
outcome, their leads, their deliveries and the delayed jobs backing them, and calls the listeners;
after the commit the deliveries' first attempts are made at once (``delivery.forward_at_once``).

Everything else (a body that is not JSON or carries no or several events, a copy of an earlier
delivery, an event that does not route, an event already claimed, or a batch whose transaction
fails) is answered as *left over*: ``processing`` handles those one by one, with its own
transaction each, so one bad event never fails the others and every rule keeps a single home.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import defaultdict
from datetime import datetime
from typing import Any

import attrs
from sqlalchemy import func, select, update

from patchbay.core.awaitables import maybe_await
from patchbay.core.connections.client import open_client
from patchbay.core.connections.models import Connection
from patchbay.core.crm_push.service import destinations, schedule_push
from patchbay.core.leads.store import NewLead, lead_json, lock_workspace_leads, save_leads
from patchbay.core.services import Services
from patchbay.core.storage.sql import one_of
from patchbay.core.timeutil import new_id, utcnow
from patchbay.core.webhooks.delivery import DELIVER_BATCH_JOB, NewDelivery, forward_at_once, forward_body, matches, safety_delay
from patchbay.core.webhooks.models import WebhookDelivery, WebhookEvent, WebhookSubscription
from patchbay.core.webhooks.protocol import InboundEvent, WebhookHandler

ROUTABLE_STATUSES = ("connected", "expired", "invalid")

#: the columns the pass reads (rows, not ORM objects: cheaper to load)
_READ = (
    WebhookEvent.id,
    WebhookEvent.provider,
    WebhookEvent.status,
    WebhookEvent.parent_id,
    WebhookEvent.body,
    WebhookEvent.body_hash,
    WebhookEvent.connection_hint,
    WebhookEvent.event_type,
    WebhookEvent.created_at,
)

#: lead fetches of one batch in flight at once
FETCH_CONCURRENCY = 16


@attrs.define
class Routed:
    """One event of the batch, routed, on its way to the transaction; also what listeners get
    (``id``, ``workspace_id``, ``provider``, ``event_type``, ``payload``, ``connection_id``) and
    what is forwarded (those and ``created_at``)."""

    id: str
    provider: str
    created_at: datetime
    handler: WebhookHandler
    item: InboundEvent
    connection: Connection
    event_type: str | None = None
    payload: dict[str, Any] = attrs.field(factory=dict)
    lead_data: Any = None
    lead_error: str | None = None

    @property
    def workspace_id(self) -> str:
        return self.connection.workspace_id

    @property
    def connection_id(self) -> str:
        return self.connection.id


async def process_batch(services: Services, event_ids: list[str]) -> list[str]:
    """Process what the fast path can of ``event_ids``; answers the ids left for one-by-one
    processing. Raises only when the batch's transaction fails (nothing of it is then written)."""
    async with services.db.session() as session:  # every read of the pass in one session
        rows = {row.id: row for row in (await session.execute(select(*_READ).where(one_of(WebhookEvent.id, event_ids)))).all()}
        events = [rows[event_id] for event_id in dict.fromkeys(event_ids) if event_id in rows]  # in the order received
        left = set(event_ids) - {event.id for event in events}  # gone: the one-by-one path ignores them
        candidates: list[tuple[Any, WebhookHandler, InboundEvent]] = []
        for event in events:
            parsed = _single_item(services, event)
            if parsed is None:
                left.add(event.id)
            else:
                candidates.append((event, *parsed))
        copied = await _copied(session, [event for event, _, _ in candidates])
        candidates = [c for c in candidates if c[0].id not in copied]
        left |= copied
        routed, unrouted = await _route(session, candidates)
        left |= unrouted
        wanted = [event for event in routed if event.handler.lead_ref(event.item)]
        known = await _processed_external_ids(session, wanted) if wanted else {}
    await _fetch_leads(services, [event for event in wanted if (event.provider, event.workspace_id, event.item.external_id) not in known])
    if routed:
        claimed_before, pending, safety_jobs = await _commit(services, routed)
        left |= claimed_before
        await forward_at_once(services, pending, safety_jobs)
    return [event_id for event_id in event_ids if event_id in left]


def _single_item(services: Services, event: Any) -> tuple[WebhookHandler, InboundEvent] | None:
    """The handler and the only provider event of a RECEIVED root event, or None (not for the fast path)."""
    if event.status != "RECEIVED" or event.parent_id is not None:
        return None
    handler = services.registry.get("webhooks", event.provider)
    if handler is None:
        return None
    try:
        payload = handler.payload(event.body or "")
    except (ValueError, TypeError):
        return None
    items = handler.typed_events(payload, event.event_type)
    if inspect.isawaitable(items):  # an asynchronous handler: the one-by-one path awaits it
        if inspect.iscoroutine(items):
            items.close()
        return None
    items = list(items)
    return (handler, items[0]) if len(items) == 1 else None


async def _copied(session, events: list[Any]) -> set[str]:
    """Events whose body was received more than once (either copy): the one-by-one path decides
    which is the original."""
    hashes = {event.body_hash for event in events if event.body_hash}
    if not hashes:
        return set()
    statement = (
        select(WebhookEvent.provider, WebhookEvent.body_hash)
        .where(one_of(WebhookEvent.body_hash, hashes), WebhookEvent.parent_id.is_(None))
        .group_by(WebhookEvent.provider, WebhookEvent.body_hash)
        .having(func.count() > 1)
    )
    repeated = {(provider, body_hash) for provider, body_hash in (await session.execute(statement)).all()}
    return {event.id for event in events if (event.provider, event.body_hash) in repeated}


async def _route(session, candidates: list[tuple[Any, WebhookHandler, InboundEvent]]) -> tuple[list[Routed], set[str]]:
    """Route the batch: one query for the ``connectionId`` hints, one per routing-key name. An event
    that matches nothing, or connections of several workspaces, is left to the one-by-one path
    (which records why)."""
    hinted = {event.connection_hint for event, _, _ in candidates if event.connection_hint}
    keyed: dict[tuple[str, str], set[str]] = defaultdict(set)  # (provider, key) -> values
    keys_of: dict[str, list[tuple[str, str]]] = {}
    for event, handler, item in candidates:
        if not event.connection_hint:
            keys_of[event.id] = [(str(key), str(value)) for key, value in await maybe_await(handler.routing_keys(item))]
            for key, value in keys_of[event.id]:
                keyed[(event.provider, key)].add(value)
    by_id: dict[str, Connection] = {}
    by_key: dict[tuple[str, str, str], list[Connection]] = defaultdict(list)  # (provider, key, value)
    if hinted:
        by_id = {c.id: c for c in (await session.scalars(select(Connection).where(one_of(Connection.id, hinted)))).all()}
    for (provider, key), values in keyed.items():
        statement = (
            select(Connection)
            .where(Connection.provider == provider, one_of(Connection.status, ROUTABLE_STATUSES), one_of(Connection.meta[key].as_string(), values))
            .order_by(Connection.created_at.desc())
        )
        for connection in (await session.scalars(statement)).all():
            by_key[(provider, key, str((connection.meta or {}).get(key)))].append(connection)
    routed, unrouted = [], set()
    for event, handler, item in candidates:
        connection = _pick(event, by_id, by_key, keys_of.get(event.id, []))
        if connection is None:
            unrouted.add(event.id)
        else:
            routed.append(Routed(event.id, event.provider, event.created_at, handler, item, connection, item.type, dict(item.data)))
    return routed, unrouted


def _pick(event: Any, by_id: dict[str, Connection], by_key: dict[tuple[str, str, str], list[Connection]], keys: list[tuple[str, str]]) -> Connection | None:
    if event.connection_hint:
        connection = by_id.get(event.connection_hint)
        ok = connection is not None and connection.provider == event.provider and connection.status in ROUTABLE_STATUSES
        return connection if ok else None
    for key, value in keys:
        found = by_key.get((event.provider, key, value), [])
        if len({connection.workspace_id for connection in found}) > 1:
            return None
        if found:
            return found[0]
    return None


async def _fetch_leads(services: Services, wanted: list[Routed]) -> None:
    """Fetch the leads of ``wanted`` through one client per connection, in chunks of the handler's
    ``lead_batch_size`` (one provider call reads a chunk where the provider allows it), a few chunks
    at a time; a failure is kept as the event's reason."""
    slots = asyncio.Semaphore(FETCH_CONCURRENCY)
    clients: dict[str, asyncio.Future] = {}

    def client_of(event: Routed) -> asyncio.Future:
        if event.connection_id not in clients:
            clients[event.connection_id] = asyncio.ensure_future(open_client(services, workspace_id=event.workspace_id, connection_id=event.connection_id))
        return clients[event.connection_id]

    async def fetch(chunk: list[Routed]) -> None:
        handler = chunk[0].handler
        async with slots:
            try:
                client = await asyncio.shield(client_of(chunk[0]))
                found = list(await maybe_await(handler.fetch_leads(client, [event.item for event in chunk])))
                if len(found) != len(chunk):
                    raise RuntimeError(f"{type(handler).__name__}.fetch_leads answered {len(found)} leads for {len(chunk)} events")
            except Exception as error:
                found = [error] * len(chunk)
        for event, lead in zip(chunk, found, strict=True):
            if isinstance(lead, Exception):
                event.lead_error = f"lead extraction failed: {lead}"[:2000]
            else:
                event.lead_data = lead

    await asyncio.gather(*(fetch(chunk) for chunk in _lead_chunks(wanted)))


def _lead_chunks(wanted: list[Routed]) -> list[list[Routed]]:
    """``wanted`` by connection (and handler), cut into chunks of the handler's ``lead_batch_size``."""
    groups: dict[tuple[str, int], list[Routed]] = defaultdict(list)
    for event in wanted:
        groups[(event.connection_id, id(event.handler))].append(event)
    chunks = []
    for group in groups.values():
        size = max(1, int(group[0].handler.lead_batch_size))
        chunks += [group[start : start + size] for start in range(0, len(group), size)]
    return chunks


async def _processed_external_ids(session, events: list[Routed]) -> dict[tuple[str, str, str], str]:
    """``(provider, workspace, provider event id)`` of the batch's events that the workspace has
    processed (PROCESSED or FAILED) already as other events, with such an event's id."""
    external = {event.item.external_id for event in events if event.item.external_id}
    if not external:
        return {}
    statement = select(WebhookEvent.provider, WebhookEvent.workspace_id, WebhookEvent.external_id, WebhookEvent.id).where(
        one_of(WebhookEvent.external_id, external),
        one_of(WebhookEvent.workspace_id, {event.workspace_id for event in events}),
        one_of(WebhookEvent.status, ("PROCESSED", "FAILED")),
        ~one_of(WebhookEvent.id, [event.id for event in events]),
    )
    rows = (await session.execute(statement)).all()
    return {(provider, workspace_id, external_id): event_id for provider, workspace_id, external_id, event_id in rows}


async def _commit(services: Services, routed: list[Routed]) -> tuple[set[str], list[tuple[NewDelivery, WebhookSubscription, Routed]], list[str]]:
    """One transaction for the batch; answers the ids another run had claimed already (left over),
    the deliveries it created and the delayed jobs backing their first attempts."""
    now = utcnow()
    async with services.db.transaction() as session:
        # Claim first: SQLite's write lock, PostgreSQL's row locks; a concurrent run claims nothing.
        events = WebhookEvent.__table__
        claim = (
            update(events)
            .where(one_of(events.c.id, [event.id for event in routed]), events.c.status == "RECEIVED")
            .values(status="PROCESSED", processed_at=now, updated_at=now)
            .returning(events.c.id)
        )
        claimed = set((await session.execute(claim)).scalars())
        mine = [event for event in routed if event.id in claimed]
        if any(event.item.external_id or event.lead_data is not None for event in mine):
            for workspace_id in sorted({event.workspace_id for event in mine}):  # one order: no deadlock
                await lock_workspace_leads(session, workspace_id)
        known = await _processed_external_ids(session, mine)
        rows, forwarded, with_lead = [], [], []
        for event in mine:
            key = (event.provider, event.workspace_id, event.item.external_id)
            row = {
                "id": event.id,
                "workspace_id": event.workspace_id,
                "connection_id": event.connection_id,
                "event_type": event.event_type,
                "external_id": event.item.external_id,
                "payload": event.payload,
                "lead_id": None,
                "reason": None,
                "status": "PROCESSED",
            }
            if event.item.external_id and key in known:
                row.update(status="DUPLICATE", reason=f"the same provider event ({event.item.external_id}) was received before as event {known[key]}")
                rows.append(row)
                continue
            if event.item.external_id:
                known[key] = event.id
            if event.lead_data is not None:
                with_lead.append((event, row))
            if event.lead_error:
                row.update(status="FAILED", reason=event.lead_error)
            rows.append(row)
            forwarded.append(event)
        new_leads = [NewLead(e.workspace_id, e.provider, e.lead_data, e.connection_id, e.id, "webhook") for e, _ in with_lead]
        created_leads = []
        for (event, row), (lead, created) in zip(with_lead, await save_leads(session, new_leads), strict=True):
            if created:
                created_leads.append(lead)
            event.payload = {**event.payload, "lead": lead_json(lead)}
            row.update(payload=event.payload, lead_id=lead.id)
        if rows:
            await session.execute(update(WebhookEvent), rows)
        pending, safety_jobs = await _create_deliveries(services, session, forwarded, now)
        await services.webhook_listeners.notify_many(session, forwarded)
        await _schedule_pushes(services, session, created_leads)
    return {event.id for event in routed} - claimed, pending, safety_jobs


async def _schedule_pushes(services: Services, session, leads: list[Any]) -> None:
    """Queue the CRM pushes of the batch's new leads: a workspace without a destination is asked
    once (a new lead there keeps its ``none`` status), not once per lead."""
    by_workspace: dict[str, list[Any]] = defaultdict(list)
    for lead in leads:
        by_workspace[lead.workspace_id].append(lead)
    for workspace_id, theirs in by_workspace.items():
        if await destinations(services, session, workspace_id):
            for lead in theirs:
                await schedule_push(services, session, lead)


async def _create_deliveries(services: Services, session, events: list[Routed], now) -> tuple[list[tuple[NewDelivery, WebhookSubscription, Routed]], list[str]]:
    """The deliveries of the batch's events to their workspaces' active, matching subscriptions (one
    query, one INSERT, each event serialized once for its deliveries, which store the bytes), and
    one delayed job per workspace backing their first attempts (made at once after the commit).
    Answers the deliveries with their subscriptions and events, and the jobs."""
    if not events:
        return [], []
    workspaces = {event.workspace_id for event in events}
    subscriptions: dict[tuple[str, str], list[WebhookSubscription]] = defaultdict(list)
    statement = select(WebhookSubscription).where(one_of(WebhookSubscription.workspace_id, workspaces), WebhookSubscription.is_active.is_(True))
    for subscription in (await session.scalars(statement)).all():
        subscriptions[(subscription.workspace_id, subscription.provider)].append(subscription)
    rows: list[dict[str, Any]] = []
    pending: list[tuple[NewDelivery, WebhookSubscription, Routed]] = []
    by_workspace: dict[str, list[str]] = defaultdict(list)  # workspace -> delivery ids
    for event in events:
        body = None
        for subscription in subscriptions.get((event.workspace_id, event.provider), ()):
            if matches(subscription, event.event_type):
                body = body or forward_body(event)
                delivery = NewDelivery(new_id(), event.workspace_id, subscription.id, body)
                rows.append(
                    {
                        "id": delivery.id,
                        "workspace_id": event.workspace_id,
                        "event_id": event.id,
                        "subscription_id": subscription.id,
                        "status": "pending",
                        "attempts": 0,
                        "manual": False,
                        "next_attempt_at": now,
                        "created_at": now,
                        "updated_at": now,
                        "body": body,
                    }
                )
                pending.append((delivery, subscription, event))
                by_workspace[event.workspace_id].append(delivery.id)
    if rows:
        await session.execute(WebhookDelivery.__table__.insert(), rows)
    delay = safety_delay(services.settings.webhooks)
    safety_jobs = []
    for workspace_id, delivery_ids in by_workspace.items():
        safety_jobs += await services.jobs.enqueue_many(session, DELIVER_BATCH_JOB, [{"delivery_ids": delivery_ids}], workspace_id=workspace_id, delay=delay)
    return pending, safety_jobs
