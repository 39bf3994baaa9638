"""The proxy audit buffer writes what it holds in multi-row inserts of at most ``AUDIT_BATCH``
rows each: a flush of more rows than one insert takes stores every row, once, as added, at the
moment it was added."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite

from patchbay import Provider, hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.models import ProxyCallLog
from patchbay.core.connections.runtime import AUDIT_BATCH, _timestamp_parameter, insert_sizes
from patchbay.core.connections.service import connect_with_api_key
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow


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


@pytest.mark.both_databases
async def test_each_row_keeps_the_moment_it_was_added(make_app, database_url):
    app = make_app(database_url=database_url)
    async with app[SERVICES].running(migrate=False) as services:
        workspace = await create_workspace_with_key(app)
        buffer = services.connections.audit
        moments = []
        for index in range(3):
            before = utcnow()
            buffer.add(
                workspace_id=workspace["workspace_id"],
                connection_id="c",
                provider="keyed",
                source="proxy",
                method="GET",
                path=f"/{index}",
                status=200,
                duration_ms=1,
            )
            moments.append((before, utcnow()))
        await buffer.flush()
        async with services.db.session() as session:
            stored = (await session.execute(select(ProxyCallLog.path, ProxyCallLog.created_at).where(ProxyCallLog.connection_id == "c"))).all()
    by_path = dict(stored)
    for index, (before, after) in enumerate(moments):
        created = by_path[f"/{index}"]
        assert created.tzinfo is not None
        assert before - timedelta(microseconds=1) <= created <= after + timedelta(microseconds=1)


@pytest.mark.both_databases
async def test_rows_with_and_without_an_error_client_or_user_are_stored_as_recorded(make_app, database_url):
    """Rows without an error, a client or a user take the insert that leaves those columns out."""
    app = make_app(database_url=database_url)
    async with app[SERVICES].running(migrate=False) as services:
        workspace = await create_workspace_with_key(app)
        buffer = services.connections.audit
        recorded = [
            {"path": "/plain", "status": 200, "error": None, "client_id": None, "user_id": None},
            {"path": "/failed", "status": 502, "error": "Keyed is unreachable", "client_id": None, "user_id": None},
            {"path": "/tool", "status": 200, "error": None, "client_id": "agent-app", "user_id": "end_user:u1"},
            {"path": "/user-only", "status": 201, "error": None, "client_id": None, "user_id": "u2"},
            {"path": "/plain-again", "status": 204, "error": None, "client_id": None, "user_id": None},
        ]
        for call in recorded:
            buffer.add(workspace_id=workspace["workspace_id"], connection_id="c", provider="keyed", source="proxy", method="GET", duration_ms=2.5, **call)
        await buffer.flush()
        async with services.db.session() as session:
            stored = (
                await session.execute(
                    select(
                        ProxyCallLog.path, ProxyCallLog.status, ProxyCallLog.error, ProxyCallLog.client_id, ProxyCallLog.user_id, ProxyCallLog.duration_ms
                    ).where(ProxyCallLog.connection_id == "c")
                )
            ).all()
    assert sorted(stored) == sorted((c["path"], c["status"], c["error"], c["client_id"], c["user_id"], 2.5) for c in recorded)


def test_the_sqlite_timestamp_text_is_the_one_sqlalchemy_stores_for_that_moment():
    dialect = sqlite.dialect()
    ours = _timestamp_parameter(dialect)
    theirs = ProxyCallLog.__table__.c.created_at.type._cached_bind_processor(dialect)
    moments = [0.0, 0.5, 1764320000.000001, 1764320000.999999, 1764323999.25] + [random.uniform(0, 4e9) for _ in range(2000)]
    for epoch in moments:
        second = int(epoch)
        moment = datetime.fromtimestamp(second, UTC).replace(microsecond=int((epoch - second) * 1_000_000))
        assert ours(epoch) == theirs(moment), epoch


def test_flushes_of_any_size_use_a_few_statement_lengths_only():
    """So that the driver's compiled statements serve every flush."""
    lengths = set()
    for count in range(3 * AUDIT_BATCH):
        sizes = insert_sizes(count)
        assert sum(sizes) == count and sizes == sorted(sizes, reverse=True)
        lengths.update(sizes)
    assert lengths == {AUDIT_BATCH} | {1 << bit for bit in range(AUDIT_BATCH.bit_length()) if 1 << bit < AUDIT_BATCH}


@pytest.mark.parametrize("dialect", [sqlite.dialect(), postgresql.asyncpg.dialect()], ids=["sqlite", "postgresql"])
def test_the_buffered_values_are_the_ones_the_columns_bind(dialect):
    """A flush hands the buffered rows to the driver as they are: each column's own bind conversion
    leaves the values a row holds unchanged (``created_at`` is converted as the row is made)."""
    values = {"status": [200, 0, 599], "duration_ms": [0.0, 1.5, 12345.678]}
    for column in ProxyCallLog.__table__.columns:
        if column.name == "created_at":
            continue
        convert = column.type._cached_bind_processor(dialect)
        for value in values.get(column.name, ["", "text", "ws_0123-é"]) + [None]:
            converted = convert(value) if convert is not None else value
            assert converted == value and type(converted) is type(value), (column.name, value)
