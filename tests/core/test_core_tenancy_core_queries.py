"""Tenant sessions scope Core queries too (issue 11, point 13): SELECT, UPDATE and DELETE on
``Model.__table__`` see only the tenant's rows; a Core tenant table the guard cannot scope (inside a
subquery) is refused instead of leaking."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, func, select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.security.models import ApiKey
from patchbay.core.storage.base import CoreTenantQuery
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.workspaces.models import Workspace

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)

KEYS = ApiKey.__table__


async def test_core_select_update_delete_are_scoped(aiohttp_client, make_app, database_url):
    app = make_app(database_url=database_url)
    await aiohttp_client(app)
    mine = await create_workspace_with_key(app, name="Mine")
    theirs = await create_workspace_with_key(app, name="Theirs")
    async with app[SERVICES].db.transaction(tenant=mine["workspace_id"]) as session:
        assert set(await session.scalars(select(KEYS.c.workspace_id))) == {mine["workspace_id"]}
        assert await session.scalar(select(func.count()).select_from(KEYS)) == 1
        joined = select(KEYS.c.workspace_id).join(Workspace, Workspace.id == KEYS.c.workspace_id)
        assert set(await session.scalars(joined)) == {mine["workspace_id"]}
        aliased = KEYS.alias("k")
        assert set(await session.scalars(select(aliased.c.workspace_id))) == {mine["workspace_id"]}
        assert (await session.execute(update(KEYS).values(name="renamed"))).rowcount == 1
        assert (await session.execute(delete(KEYS).where(KEYS.c.name == "renamed"))).rowcount == 1
    async with app[SERVICES].db.session() as session:  # a system session sees everything
        assert set(await session.scalars(select(KEYS.c.workspace_id))) == {theirs["workspace_id"]}
        assert await session.scalar(select(KEYS.c.name)) == "test"


async def test_unscopable_core_subquery_is_refused(aiohttp_client, make_app):
    app = make_app()
    await aiohttp_client(app)
    mine = await create_workspace_with_key(app, name="Mine")
    inner = select(KEYS.c.workspace_id).subquery()
    async with app[SERVICES].db.session(tenant=mine["workspace_id"]) as session:
        with pytest.raises(CoreTenantQuery):
            await session.scalar(select(func.count()).select_from(inner))
        # the same through the model is scoped by the ORM and allowed
        assert await session.scalar(select(func.count()).select_from(select(ApiKey.id).subquery())) == 1
