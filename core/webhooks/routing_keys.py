"""Routing keys are held by one workspace (contract section 7).

A provider's webhook handler names the connection metadata its events are routed by
(``WebhookHandler.routing_metadata_keys``, e.g. Meta's ``page_id``). Whoever sets such a key on a
connection (connect, token import, OAuth callback, metadata PATCH) claims that provider's events for
its workspace, so a claim on a key that another workspace's connection already holds is refused with
409 naming the key, before anything changes. Two first claims racing each other can both pass; the
router then refuses to guess between workspaces (``processing.route``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select

from patchbay.core.connections.models import Connection
from patchbay.core.errors import Conflict
from patchbay.core.plugins.registry import Registry
from patchbay.core.storage.db import Database

#: Connections that receive routed events (as ``processing.ROUTABLE_STATUSES``) hold their keys.
HOLDING_STATUSES = ("connected", "expired", "invalid")


def routing_key_names(registry: Registry, provider: str) -> tuple[str, ...]:
    """The metadata names that route ``provider``'s inbound events (none without a webhook handler)."""
    handler = registry.get("webhooks", provider)
    return tuple(getattr(handler, "routing_metadata_keys", ()) or ())


async def ensure_routing_keys_free(db: Database, registry: Registry, *, workspace_id: str, provider: str, metadata: Mapping[str, Any]) -> None:
    """Conflict (409) when ``metadata`` sets a routing key that another workspace's connection holds."""
    claimed = [(name, str(metadata[name])) for name in routing_key_names(registry, provider) if metadata.get(name) not in (None, "")]
    if not claimed:
        return
    async with db.session() as session:  # a system session: the holders are other tenants' rows
        for name, value in claimed:
            holder = await session.scalar(
                select(Connection.id)
                .where(
                    Connection.provider == provider,
                    Connection.workspace_id != workspace_id,
                    Connection.status.in_(HOLDING_STATUSES),
                    Connection.meta[name].as_string() == value,
                )
                .limit(1)
            )
            if holder is not None:
                raise Conflict(f"Routing key {name}={value} is held by another workspace's {provider} connection")
