"""Connections stored the way the connections feature stores them, for tests that skip the connect flow."""

from __future__ import annotations

import json

from aiohttp import web

from patchbay.core.appkeys import DB, SECRETS
from patchbay.core.connections.models import Connection
from patchbay.core.timeutil import utcnow


async def add_connection(app: web.Application, workspace_id: str, provider: str, *, meta: dict | None = None, params: dict | None = None,
                         credentials: dict | None = None, status: str = "connected") -> str:  # fmt: skip
    """A connection row as the connections feature stores it (credentials encrypted)."""
    secret = app[SECRETS].encrypt(json.dumps(credentials or {"access_token": "test-token"}))
    async with app[DB].transaction(tenant=workspace_id) as session:
        row = Connection(provider=provider, status=status, credentials=secret, params=params or {}, meta=meta or {}, scopes=[], connected_at=utcnow())
        session.add(row)
    return row.id
