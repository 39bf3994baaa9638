"""Agent grants: stored for a workspace's own connections only, active until revoked or expired."""

from __future__ import annotations

from datetime import timedelta

import pytest

from patchbay.core.errors import Invalid, NotFound, Unauthenticated
from patchbay.core.mcp.grants import active_grant, create_grant, grants_of_user, revoke_grant
from patchbay.core.services import build_services
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow

pytestmark = pytest.mark.both_databases


@pytest.fixture
async def services(make_settings, database_url):
    services = build_services(make_settings(database_url=database_url))
    async with services.running(migrate=False):
        yield services


async def _connection(services, workspace_id: str) -> str:
    from patchbay.core.connections.models import Connection
    from patchbay.core.connections.store import encrypt_credentials

    async with services.db.transaction(tenant=workspace_id) as session:
        row = Connection(provider="fake", credentials=encrypt_credentials(services, {"api_key": "k"}), workspace_id=workspace_id)
        session.add(row)
        await session.flush()
        return row.id


async def test_a_grant_is_active_until_revoked(services):
    ws = await create_workspace_with_key(services)
    connection = await _connection(services, ws["workspace_id"])
    grant = await create_grant(
        services, workspace_id=ws["workspace_id"], user_id=None, client_id="agent-session", connection_ids=[connection], end_user_id="u1", tools=["a"]
    )
    assert grant.id.startswith("agr_") and grant.connection_ids == (connection,) and grant.tools == ("a",)
    assert (await active_grant(services, grant.id)) == grant
    other = await create_workspace_with_key(services, name="Other")
    with pytest.raises(NotFound):
        await revoke_grant(services, grant.id, workspace_id=other["workspace_id"])
    await revoke_grant(services, grant.id, workspace_id=ws["workspace_id"])
    with pytest.raises(Unauthenticated):
        await active_grant(services, grant.id)
    with pytest.raises(Unauthenticated):
        await active_grant(services, "agr_missing")


async def test_a_grant_names_only_connections_of_its_workspace(services):
    ws = await create_workspace_with_key(services)
    other = await create_workspace_with_key(services, name="Other")
    foreign = await _connection(services, other["workspace_id"])
    with pytest.raises(Invalid, match=foreign):
        await create_grant(services, workspace_id=ws["workspace_id"], user_id=None, client_id="c", connection_ids=[foreign])


async def test_an_expired_grant_is_refused_and_not_listed(services):
    ws = await create_workspace_with_key(services)
    from patchbay.core.users.models import User

    async with services.db.transaction() as session:
        user = User(email="a@example.com")
        session.add(user)
        await session.flush()
        user_id = user.id
    expired = await create_grant(
        services, workspace_id=ws["workspace_id"], user_id=user_id, client_id="c", connection_ids=[], expires_at=utcnow() - timedelta(seconds=1)
    )
    live = await create_grant(services, workspace_id=ws["workspace_id"], user_id=user_id, client_id="c", connection_ids=[])
    with pytest.raises(Unauthenticated):
        await active_grant(services, expired.id)
    assert [grant.id for grant in await grants_of_user(services, user_id)] == [live.id]
