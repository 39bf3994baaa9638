"""Connections stored the way the connections feature stores them, for tests that skip the connect flow."""

from __future__ import annotations

import json

from aiohttp import web

from patchbay.core.connections.models import Connection
from patchbay.core.services import Services
from patchbay.core.testing import services_of
from patchbay.core.timeutil import utcnow


async def add_connection(
    services: Services | web.Application,
    workspace_id: str,
    provider: str,
    *,
    meta: dict | None = None,
    params: dict | None = None,
    credentials: dict | None = None,
    status: str = "connected",
) -> str:
    """A connection row as the connections feature stores it (credentials encrypted). ``services``
    may still be the test's app (its services are used), as most tests hold the app."""
    services = services_of(services)
    async with services.db.transaction(tenant=workspace_id) as session:
        row = Connection(
            provider=provider,
            status=status,
            credentials=services.secrets.encrypt(json.dumps(credentials or {"access_token": "test-token"})),
            params=params or {},
            meta=meta or {},
            scopes=[],
            connected_at=utcnow(),
        )
        session.add(row)
    return row.id
