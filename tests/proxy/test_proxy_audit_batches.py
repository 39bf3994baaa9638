"""The proxy audit buffer writes what it holds in multi-row inserts of at most ``AUDIT_BATCH``
rows each: a flush of more rows than one insert takes stores every row, once, as added."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from patchbay import Provider, hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.models import ProxyCallLog
from patchbay.core.connections.runtime import AUDIT_BATCH
from patchbay.core.connections.service import connect_with_api_key
from patchbay.core.testing import create_workspace_with_key


class KeyPack:
    @hookimpl
    def register_providers(self):
        return [Provider(name="keyed", display_name="Keyed", category="other", auth_mode="api_key", api_base_url="https://api.keyed.example")]


@pytest.mark.both_databases
async def test_a_flush_of_more_rows_than_one_insert_takes_stores_each_row_once(make_app, database_url):
    app = make_app(plugins=[KeyPack()], database_url=database_url)
    services = app[SERVICES]
    async with services.running(migrate=False):
        workspace = await create_workspace_with_key(app)
        connection = await connect_with_api_key(
            services, workspace_id=workspace["workspace_id"], provider_name="keyed", credentials={"apiKey": "k"}, validate=False
        )
        connection_id = connection.id
        buffer = services.connections.audit
        count = 2 * AUDIT_BATCH + 7
        for index in range(count):
            buffer.add(
                workspace_id=workspace["workspace_id"],
                connection_id=connection_id,
                provider="keyed",
                source="proxy",
                method="GET",
                path=f"/repos/{index}",
                status=200 + index % 3,
                duration_ms=index / 7,
            )
        await buffer.flush()
        async with services.db.session() as session:
            rows = (
                await session.execute(
                    select(ProxyCallLog.path, ProxyCallLog.status, ProxyCallLog.duration_ms).where(ProxyCallLog.connection_id == connection_id)
                )
            ).all()
            ids = (await session.execute(select(func.count(func.distinct(ProxyCallLog.id))))).scalar_one()
    assert sorted(rows) == sorted((f"/repos/{index}", 200 + index % 3, round(index / 7, 3)) for index in range(count))
    assert ids == count
