"""Listeners of inbound events: how other features (the flow triggers) act on an event atomically.

A listener is ``async def listener(session, event)``. It is called for every verified inbound event
that was routed to a workspace (PROCESSED, or FAILED because lead extraction failed), inside the
transaction that records the event's processing: whatever it writes with ``session`` (enqueued jobs,
flow runs) commits together with the event's new status, or not at all. ``session`` is a system
session (not tenant-scoped): scope your writes with ``event.workspace_id``. ``event`` has ``id``,
``workspace_id``, ``provider``, ``event_type``, ``payload``, ``connection_id``. A listener that
raises rolls the whole processing back (nothing forwarded) and the event is marked FAILED with the
error, so listeners must not fail on bad data.

A listener may also have a ``many(session, events)`` method: a batch of events processed in one
transaction is then handed to it in one call (one query for the batch instead of one per event).

Register in your domain's ``install(services)``: ``services.webhook_listeners.add(listener)`` (the
webhooks domain's ``install`` creates the registry; one that runs first may create it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

Listener = Callable[[Any, Any], Awaitable[None]]


class WebhookListeners:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def add(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def __len__(self) -> int:
        return len(self._listeners)

    async def notify(self, session: Any, event: Any) -> None:
        for listener in self._listeners:
            await listener(session, event)

    async def notify_many(self, session: Any, events: list[Any]) -> None:
        """Notify every listener of ``events``, with one ``many`` call where a listener has one."""
        if not events:
            return
        for listener in self._listeners:
            many = getattr(listener, "many", None)
            if many is not None:
                await many(session, events)
                continue
            for event in events:
                await listener(session, event)
