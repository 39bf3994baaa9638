"""Flow triggers (spec 2.7, 6.4): webhook events and polled items start the published version of
every live flow whose active trigger subscription matches.

- Webhook: the inbound pipeline calls our listener inside the transaction that records the event;
  matching executions are created in that same transaction (so an event is never lost between the
  two) with the dedupe key ``event:<event id>:<flow id>``: a redelivered event, or an event arriving
  while the flow is republished, starts each flow exactly once. The version is resolved when the
  event is recorded, and publishing never touches subscriptions, so nothing is dropped.
- Poll: the ``poll-triggers`` periodic job calls each poll subscription's
  ``trigger.poll(client, config, cursor)``; every item starts the flow once
  (``poll:<subscription>:<item id>``) and the returned cursor is stored for the next poll.
- Records replay (``fire_matching_triggers`` with ``source="records"``) re-fires subscriptions of
  either kind whose event types include the record's resource type.

A subscription matches an event type when it is in the subscription's ``config.eventTypes``, else in
the trigger's ``event_types``, else equals the trigger's name; ``*`` matches every type.
"""

from __future__ import annotations

import functools
import logging
import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import jmespath
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.billing.limits import enforce_limit
from patchbay.core.connections.models import Connection
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.models import Flow, FlowTriggerSubscription
from patchbay.core.flows.service import get_flow, is_live
from patchbay.core.storage.sql import one_of
from patchbay.core.timeutil import iso, utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services

log = logging.getLogger(__name__)

POLL_BATCH = 200
#: seconds between two runs of the ``poll-triggers`` periodic job
POLL_INTERVAL_SECONDS = 60


#: the trigger that takes any verified inbound event of its provider (``*``: of every provider),
#: narrowed by ``config.eventTypes`` and ``config.match``
WEBHOOK_RECEIVED = "webhook.received"
#: the ``config`` of ``webhook.received`` (and of any webhook subscription) as a JSON Schema
WEBHOOK_FILTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "eventTypes": {"type": "array", "items": {"type": "string"}, "description": "Event names to take ('*': all); default all"},
        "match": {
            "type": "object",
            "additionalProperties": True,
            "description": "Field path (JMESPath, such as data.object.currency) -> the value it must equal",
        },
    },
}
#: what an event name subscribed to directly looks like (``customer.created``, ``issues``, ``*``)
_EVENT_NAME = re.compile(r"^[\w.:/*-]{1,100}$")


def event_types_of(registry: Any, subscription: FlowTriggerSubscription) -> list[str]:
    configured = (subscription.config or {}).get("eventTypes")
    if isinstance(configured, list) and configured:
        return [str(t) for t in configured]
    if subscription.trigger_name == WEBHOOK_RECEIVED:
        return ["*"]
    trigger = (registry.get("triggers", subscription.provider_type) or {}).get(subscription.trigger_name)
    if trigger is not None and trigger.event_types:
        return list(trigger.event_types)
    return [subscription.trigger_name]


def matches(registry: Any, subscription: FlowTriggerSubscription, event_type: str, payload: Any = None) -> bool:
    types = event_types_of(registry, subscription)
    if "*" not in types and event_type not in types:
        return False
    match = (subscription.config or {}).get("match")
    return not match or fields_match(match, payload)


def fields_match(match: dict[str, Any], payload: Any) -> bool:
    """Whether every ``path: value`` of ``match`` holds in ``payload``: the path a JMESPath
    expression (``data.object.currency``), the value compared for equality."""
    return all(_search(path, payload) == expected for path, expected in match.items())


@functools.lru_cache(maxsize=1024)
def _compiled(path: str) -> Any:
    return jmespath.compile(path)


def _search(path: str, payload: Any) -> Any:
    try:
        return _compiled(path).search(payload)
    except jmespath.exceptions.JMESPathError:
        return None


def _live_subscriptions(source: str):
    """Active trigger subscriptions of live flows, with the flows' published versions; only the
    webhook kind when ``source`` is ``webhook``."""
    statement = (
        select(FlowTriggerSubscription, Flow.published_version)
        .join(Flow, Flow.id == FlowTriggerSubscription.flow_id)
        .where(FlowTriggerSubscription.is_active.is_(True), is_live())
    )
    return statement.where(FlowTriggerSubscription.kind == "webhook") if source == "webhook" else statement


def _execution_rows(
    registry: Any, found: list[Any], *, workspace_id: str, event_type: str, payload: Any, source: str, dedupe: str | None, connection_id: str | None
) -> list[dict[str, Any]]:
    """One execution per flow among ``found`` (subscription, version) that matches the event."""
    rows: dict[str, dict[str, Any]] = {}
    for subscription, version in found:
        if connection_id and subscription.connection_id and subscription.connection_id != connection_id:
            continue
        if subscription.flow_id in rows or not matches(registry, subscription, event_type, payload):
            continue
        rows[subscription.flow_id] = {
            "workspace_id": workspace_id,
            "flow_id": subscription.flow_id,
            "version": version,
            "trigger_source": source,
            "trigger_payload": payload,
            "subscription_id": subscription.id,
            "dedupe_key": f"{source}:{dedupe}:{subscription.flow_id}" if dedupe else None,
        }
    return list(rows.values())


async def fire_matching_triggers(
    services: Services,
    session: AsyncSession,
    *,
    workspace_id: str,
    provider_type: str,
    event_type: str,
    payload: Any,
    source: str,
    dedupe: str | None = None,
    connection_id: str | None = None,
) -> int:
    """Start every live flow with an active subscription matching ``(provider_type, event_type)``,
    in ``session``'s transaction. ``source`` is ``webhook`` (webhook subscriptions) or ``records``
    (subscriptions of either kind); ``dedupe`` (an event id) makes a repeated call a no-op.
    Answers the number of executions created."""
    providers = {provider_type, "*"} if source == "webhook" else {provider_type}
    statement = _live_subscriptions(source).where(
        FlowTriggerSubscription.workspace_id == workspace_id, one_of(FlowTriggerSubscription.provider_type, providers)
    )
    found = (await session.execute(statement)).all()
    rows = _execution_rows(
        services.registry, found, workspace_id=workspace_id, event_type=event_type, payload=payload, source=source, dedupe=dedupe, connection_id=connection_id
    )
    return len(await create_executions(services, session, rows))


class InboundEventListener:
    """The inbound-webhook listener, called in the transaction that records verified, routed
    events: ``listener(session, event)`` for one, ``listener.many(session, events)`` for a batch
    (one query for the subscriptions of every workspace and provider of the batch, one INSERT)."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, session: AsyncSession, event: Any) -> int:
        return await self.many(session, [event])

    async def many(self, session: AsyncSession, events: list[Any]) -> int:
        events = [event for event in events if getattr(event, "workspace_id", None)]
        if not events:
            return 0
        statement = _live_subscriptions("webhook").where(
            one_of(FlowTriggerSubscription.workspace_id, {event.workspace_id for event in events}),
            one_of(FlowTriggerSubscription.provider_type, {event.provider for event in events} | {"*"}),
        )
        found: dict[tuple[str, str], list[Any]] = defaultdict(list)
        for subscription, version in (await session.execute(statement)).all():
            found[(subscription.workspace_id, subscription.provider_type)].append((subscription, version))
        rows = []
        for event in events:
            rows += _execution_rows(
                self.services.registry,
                found.get((event.workspace_id, event.provider), []) + found.get((event.workspace_id, "*"), []),
                workspace_id=event.workspace_id,
                event_type=event.event_type,
                payload=event.payload,
                source="webhook",
                dedupe=str(event.id),
                connection_id=getattr(event, "connection_id", None),
            )
        return len(await create_executions(self.services, session, rows))


# ---------------------------------------------------------------------------------------------
# Polling
# ---------------------------------------------------------------------------------------------


def _item_key(trigger: Any, item: Any) -> str:
    if trigger.item_id is not None:
        return str(trigger.item_id(item))
    if isinstance(item, dict) and item.get("id") is not None:
        return str(item["id"])
    raise ValueError("a polled item has no id and the trigger defines no item_id")


async def poll_subscription(services: Services, subscription: FlowTriggerSubscription, version: int) -> int:
    """Poll one subscription from its cursor; answers the executions started."""
    from patchbay.core.connections.client import open_client

    trigger = (services.registry.get("triggers", subscription.provider_type) or {}).get(subscription.trigger_name)
    error: str | None = None
    created = 0
    next_cursor = subscription.cursor
    try:
        if trigger is None or trigger.kind != "poll" or trigger.poll is None:
            raise ValueError(f"{subscription.provider_type} has no poll trigger named {subscription.trigger_name!r}")
        if not subscription.connection_id:
            raise ValueError("a poll trigger needs a connectionId")
        client = await open_client(services, workspace_id=subscription.workspace_id, connection_id=subscription.connection_id)
        items, next_cursor = await trigger.poll(client, dict(subscription.config or {}), subscription.cursor)
        rows = [
            {
                "workspace_id": subscription.workspace_id,
                "flow_id": subscription.flow_id,
                "version": version,
                "trigger_source": "poll",
                "trigger_payload": item,
                "subscription_id": subscription.id,
                "dedupe_key": f"poll:{subscription.id}:{_item_key(trigger, item)}",
            }
            for item in items or []
        ]
    except Exception as failure:  # the provider's error: kept on the subscription, retried next tick
        error, rows = f"{type(failure).__name__}: {failure}"[:2000], []
        log.info("polling trigger subscription %s failed: %s", subscription.id, error)
    async with services.db.transaction() as session:
        if rows:
            created = len(await create_executions(services, session, rows))
        values: dict[str, Any] = {"last_polled_at": utcnow(), "last_error": error}
        if error is None:
            values["cursor"] = next_cursor
        await session.execute(
            update(FlowTriggerSubscription).where(FlowTriggerSubscription.id == subscription.id).values(**values).execution_options(synchronize_session=False)
        )
    return created


async def poll_triggers(services: Services) -> dict[str, Any]:
    """The ``poll-triggers`` periodic job: poll every active poll subscription of a live flow."""
    async with services.db.session() as session:
        rows = (
            await session.execute(
                select(FlowTriggerSubscription, Flow.published_version)
                .join(Flow, Flow.id == FlowTriggerSubscription.flow_id)
                .where(FlowTriggerSubscription.kind == "poll", FlowTriggerSubscription.is_active.is_(True), is_live())
                .order_by(FlowTriggerSubscription.last_polled_at.asc().nulls_first())
                .limit(POLL_BATCH)
            )
        ).all()
    started = 0
    for subscription, version in rows:
        started += await poll_subscription(services, subscription, version)
    return {"subscriptions": len(rows), "executions": started}


async def count_active_triggers(session: AsyncSession, workspace_id: str) -> int:
    """The billing counter of ``active_triggers``."""
    return (
        await session.scalar(
            select(func.count())
            .select_from(FlowTriggerSubscription)
            .where(FlowTriggerSubscription.workspace_id == workspace_id, FlowTriggerSubscription.is_active.is_(True))
        )
        or 0
    )


# ---------------------------------------------------------------------------------------------
# Subscriptions (spec 4.10)
# ---------------------------------------------------------------------------------------------


def subscription_json(subscription: FlowTriggerSubscription) -> dict[str, Any]:
    return {
        "id": subscription.id,
        "subscriptionId": subscription.id,
        "flowId": subscription.flow_id,
        "providerType": subscription.provider_type,
        "triggerName": subscription.trigger_name,
        "kind": subscription.kind,
        "connectionId": subscription.connection_id,
        "config": subscription.config,
        "isActive": subscription.is_active,
        "cursor": subscription.cursor,
        "lastPolledAt": iso(subscription.last_polled_at),
        "lastError": subscription.last_error,
        "createdAt": iso(subscription.created_at),
    }


async def list_subscriptions(services: Services, *, workspace_id: str, flow_id: str) -> list[FlowTriggerSubscription]:
    """The flow's trigger subscriptions, oldest first; ``NotFound`` without the flow."""
    async with services.db.session(tenant=workspace_id) as session:
        flow = await get_flow(session, flow_id)
        statement = select(FlowTriggerSubscription).where(FlowTriggerSubscription.flow_id == flow.id).order_by(FlowTriggerSubscription.created_at)
        return list((await session.scalars(statement)).all())


async def subscribe(services: Services, *, workspace_id: str, flow_id: str, body: dict[str, Any]) -> FlowTriggerSubscription:
    """Subscribe the flow to a provider trigger from ``{providerType, triggerName, kind?,
    connectionId?, config?}``: ``Invalid`` naming the field, ``NotFound`` for an unknown provider or
    flow, ``PlanLimitExceeded`` past the plan's ``active_triggers``."""
    provider_type, trigger_name, kind = body.get("providerType"), body.get("triggerName"), body.get("kind")
    connection_id, config = body.get("connectionId"), body.get("config") or {}
    if not isinstance(provider_type, str) or not provider_type:
        raise Invalid("providerType is required")
    registry = services.registry
    if not isinstance(trigger_name, str) or not trigger_name:
        raise Invalid("triggerName is required")
    if not isinstance(config, dict):
        raise Invalid("config must be an object")
    if provider_type == "*" and trigger_name != WEBHOOK_RECEIVED:
        raise Invalid(f"providerType: '*' (every provider) is for the {WEBHOOK_RECEIVED} trigger only")
    if provider_type != "*" and registry.provider(provider_type) is None:
        raise NotFound(f"Provider not found: {provider_type}")
    trigger_kind = _trigger_kind(registry, provider_type, trigger_name)
    kind = kind or trigger_kind
    if kind not in ("webhook", "poll"):
        raise Invalid("kind must be webhook or poll")
    if kind != trigger_kind:
        raise Invalid(f"kind: trigger {trigger_name!r} is a {trigger_kind} trigger")
    _check_filter(config)
    if connection_id is not None and not isinstance(connection_id, str):
        raise Invalid("connectionId must be a string")
    if kind == "poll" and not connection_id:
        raise Invalid("connectionId is required for a poll trigger")
    if provider_type == "*" and connection_id:
        raise Invalid("connectionId: a trigger of every provider hears every connection")
    async with services.db.transaction(tenant=workspace_id) as session:
        flow = await get_flow(session, flow_id)
        if connection_id:
            connection = await session.scalar(select(Connection).where(Connection.id == connection_id))
            if connection is None or connection.status == "disconnected":
                raise Invalid("connectionId: no such connection in this workspace")
            if connection.provider != provider_type:
                raise Invalid(f"connectionId: the connection is to {connection.provider}, not {provider_type}")
        await enforce_limit(session, workspace_id, "active_triggers")
        subscription = FlowTriggerSubscription(
            flow_id=flow.id, provider_type=provider_type, trigger_name=trigger_name, kind=kind, connection_id=connection_id, config=config, is_active=True
        )
        session.add(subscription)
    return subscription


def _trigger_kind(registry: Any, provider_type: str, trigger_name: str) -> str:
    """The kind of the trigger ``trigger_name`` of a provider: a registered trigger's, else
    ``webhook`` when the provider's inbound webhooks are verified (``webhook.received``, or an
    event name of the provider such as Stripe's ``customer.created``); ``Invalid`` otherwise."""
    trigger = (registry.get("triggers", provider_type) or {}).get(trigger_name)
    if trigger is not None:
        return trigger.kind
    verified = provider_type == "*" or registry.get("webhooks", provider_type) is not None
    if verified and (trigger_name == WEBHOOK_RECEIVED or _EVENT_NAME.match(trigger_name)):
        return "webhook"
    raise Invalid(
        f"triggerName: {provider_type} has no trigger named {trigger_name!r} (see GET /connect/v1/flows/trigger-options)"
        + ("" if verified else f"; {provider_type} has no verified inbound webhooks, so its event names cannot start a flow")
    )


def _check_filter(config: dict[str, Any]) -> None:
    """``config.eventTypes`` (event names) and ``config.match`` (JMESPath expression -> value)."""
    event_types = config.get("eventTypes")
    if event_types is not None and (not isinstance(event_types, list) or not all(isinstance(t, str) and t for t in event_types)):
        raise Invalid("config.eventTypes must be a list of event names")
    match = config.get("match")
    if match is None:
        return
    if not isinstance(match, dict):
        raise Invalid("config.match must be an object of field path -> value")
    for path in match:
        try:
            _compiled(path)
        except jmespath.exceptions.JMESPathError as error:
            raise Invalid(f"config.match: {path!r} is not a field path: {error}") from None


async def unsubscribe(services: Services, *, workspace_id: str, flow_id: str, subscription_id: str) -> None:
    """Remove a trigger subscription of the flow; ``NotFound`` when there is none."""
    async with services.db.transaction(tenant=workspace_id) as session:
        subscription = await session.scalar(
            select(FlowTriggerSubscription).where(FlowTriggerSubscription.id == subscription_id, FlowTriggerSubscription.flow_id == flow_id)
        )
        if subscription is None:
            raise NotFound("Trigger subscription not found")
        await session.delete(subscription)
