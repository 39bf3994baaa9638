"""Listeners of connection removals: how other features act on a connection that is disconnected
or deleted, atomically with it.

A listener is ``async def listener(session, removal)``, called inside the transaction that
disconnects or deletes the connection; what it writes with ``session`` (a tenant session of the
connection's workspace) commits with the removal, or not at all. Register in a domain's
``install(services)``: ``services.connection_removal_listeners.add(listener)`` (the connections
domain installs the listeners first).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs


@attrs.frozen(kw_only=True)
class ConnectionRemoval:
    """A connection that is going away: ``deleted`` when its row is deleted, else disconnected
    (credentials wiped, the row kept)."""

    workspace_id: str
    provider: str
    connection_id: str
    end_user_id: str | None
    deleted: bool


RemovalListener = Callable[[Any, ConnectionRemoval], Awaitable[None]]


class RemovalListeners:
    def __init__(self) -> None:
        self._listeners: list[RemovalListener] = []

    def add(self, listener: RemovalListener) -> None:
        self._listeners.append(listener)

    async def notify(self, session: Any, removal: ConnectionRemoval) -> None:
        for listener in self._listeners:
            await listener(session, removal)
