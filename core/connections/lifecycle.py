"""Listeners of connection removals: how other features act on a connection that is disconnected
or deleted, atomically with it.

A listener is ``async def listener(session, removal)``, called inside the transaction that
disconnects or deletes the connection; what it writes with ``session`` (a tenant session of the
connection's workspace) commits with the removal, or not at all. Register in a feature's
``setup(app)``: ``removal_listeners(app).add(listener)``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from aiohttp import web

from patchbay.core.appkeys import CONNECTION_REMOVAL_LISTENERS


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


def removal_listeners(app: web.Application) -> RemovalListeners:
    """The app's removal listeners, created on first use (so setup order does not matter)."""
    if CONNECTION_REMOVAL_LISTENERS not in app:
        app[CONNECTION_REMOVAL_LISTENERS] = RemovalListeners()
    return app[CONNECTION_REMOVAL_LISTENERS]
