"""Fixtures of the flow tests: an app on either database, a client, a workspace, and ``drain_jobs``
to run queued jobs in the test's own task (no background workers)."""

from __future__ import annotations

from typing import Any

import pytest

from patchbay.core.flows.testing import drain
from patchbay.core.testing import create_workspace_with_key


@pytest.fixture
def drain_jobs():
    return drain


@pytest.fixture
async def flows_client(aiohttp_client, make_app, database_url):
    """A client of an app on SQLite and on PostgreSQL (parametrised)."""
    return await aiohttp_client(make_app(database_url=database_url))


@pytest.fixture
async def flows_ws(flows_client) -> dict[str, Any]:
    return await create_workspace_with_key(flows_client.server.app)
