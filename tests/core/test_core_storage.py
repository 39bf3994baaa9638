"""Storage on SQLite and PostgreSQL: tenant scoping in one place, migrations equal to the models,
SQLite's pragmas, PostgreSQL connections pinged only when they come back from idling."""

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import UniqueConstraint, func, inspect, select, text

from patchbay.core.security.models import ApiKey
from patchbay.core.storage import db as storage_db
from patchbay.core.storage.base import Base, CrossTenantWrite, TenantScoped
from patchbay.core.storage.db import Database
from patchbay.core.storage.migrate import alembic_config
from patchbay.core.storage.models import metadata
from patchbay.core.workspaces.models import Workspace

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)


async def make_workspaces(db, *names):
    async with db.transaction() as session:
        rows = [Workspace(name=name, slug=name.lower()) for name in names]
        session.add_all(rows)
    return [row.id for row in rows]


async def test_tenant_session_sees_only_its_rows_and_stamps_new_ones(db):
    first, second = await make_workspaces(db, "One", "Two")
    async with db.transaction(tenant=first) as session:
        session.add(ApiKey(name="mine", prefix="pb_1", key_digest="d1", permissions=[]))
    async with db.transaction(tenant=second) as session:
        session.add(ApiKey(name="theirs", prefix="pb_2", key_digest="d2", permissions=[]))
    async with db.session() as system:
        theirs_id = await system.scalar(select(ApiKey.id).where(ApiKey.name == "theirs"))
    async with db.session(tenant=first) as session:
        keys = (await session.scalars(select(ApiKey))).all()
        assert [(k.name, k.workspace_id) for k in keys] == [("mine", first)]
        assert await session.get(ApiKey, theirs_id) is None
        assert await session.scalar(select(func.count()).select_from(ApiKey)) == 1
    async with db.session() as session:  # a system session sees everything
        assert await session.scalar(select(func.count()).select_from(ApiKey)) == 2


async def test_tenant_session_cannot_write_another_tenants_row(db):
    first, second = await make_workspaces(db, "One", "Two")
    with pytest.raises(CrossTenantWrite):
        async with db.transaction(tenant=first) as session:
            session.add(ApiKey(workspace_id=second, name="sneaky", prefix="pb_3", key_digest="d3", permissions=[]))
    async with db.session() as session:
        assert await session.scalar(select(func.count()).select_from(ApiKey)) == 0


async def test_bulk_update_and_delete_are_scoped(db):
    from sqlalchemy import delete, update

    first, second = await make_workspaces(db, "One", "Two")
    async with db.transaction() as session:
        session.add_all([ApiKey(workspace_id=w, name="k", prefix="pb", key_digest=f"d{w}", permissions=[]) for w in (first, second)])
    async with db.transaction(tenant=first) as session:
        await session.execute(update(ApiKey).values(name="renamed"))
        await session.execute(delete(ApiKey).where(ApiKey.name == "k"))
    async with db.session() as session:
        names = dict((await session.execute(select(ApiKey.workspace_id, ApiKey.name))).all())
    assert names == {first: "renamed", second: "k"}


async def test_migrations_match_the_models(db):
    async with db.engine.connect() as connection:
        diff = await connection.run_sync(lambda sync: compare_metadata(MigrationContext.configure(sync), metadata))
    significant = [entry for entry in diff if not _is_fts_shadow(entry)]
    assert significant == []


PARTIAL = ("sqlite_where", "postgresql_where")


def test_a_tenant_tables_workspace_id_is_indexed_once(make_app):
    """Alone when no composite index or unique constraint leads with it, else only by that one
    (every insert writes each index: a second one serving the same lookups only costs)."""
    make_app()  # every model of the built-in packs registered
    for mapper in Base.registry.mappers:
        if not issubclass(mapper.class_, TenantScoped):
            continue
        table = mapper.local_table
        alone = [index.name for index in table.indexes if [column.name for column in index.columns] == ["workspace_id"]]
        composite = [*table.indexes, *(constraint for constraint in table.constraints if isinstance(constraint, UniqueConstraint))]
        whole = [
            item for item in composite if not any(item.dialect_kwargs.get(where) is not None for where in PARTIAL)
        ]  # a partial index serves some rows only
        leading = [item.name for item in whole if len(item.columns) > 1 and next(iter(item.columns)).name == "workspace_id"]
        assert len(alone) == (0 if leading else 1), (table.name, alone, leading)


async def test_the_redundant_workspace_indexes_come_back_on_downgrade(db):
    def indexes(sync) -> set[str]:
        inspector = inspect(sync)
        return {index["name"] for table in ("proxy_call_logs", "webhook_events", "flow_approvals") for index in inspector.get_indexes(table)}

    async with db.engine.begin() as connection:
        upgraded = await connection.run_sync(indexes)
        await connection.run_sync(lambda sync: command.downgrade(alembic_config(sync), "console_logs_0001"))
        downgraded = await connection.run_sync(indexes)
        await connection.run_sync(lambda sync: command.upgrade(alembic_config(sync), "heads"))
        again = await connection.run_sync(indexes)
    redundant = {"ix_proxy_call_logs_workspace_id", "ix_webhook_events_workspace_id", "ix_flow_approvals_workspace_id"}
    assert not upgraded & redundant and redundant <= downgraded and again == upgraded
    assert {"ix_proxy_call_logs_workspace_created", "ix_webhook_events_workspace_created", "ix_flow_approvals_workspace_status"} <= upgraded


SEARCH_MARKERS = ("fts", "trgm", "tsv")


def _is_fts_shadow(entry) -> bool:
    """Full-text search structures (SQLite FTS5 virtual tables and their shadows, PostgreSQL
    expression indexes) are dialect-specific and live in the migrations only."""
    if isinstance(entry, tuple) and entry and entry[0] in ("remove_table", "remove_index"):
        return any(marker in (entry[1].name or "") for marker in SEARCH_MARKERS)
    return False


async def test_sqlite_pragmas(sqlite_url):
    db = Database(sqlite_url)
    try:
        async with db.engine.connect() as connection:
            assert (await connection.execute(text("PRAGMA journal_mode"))).scalar() == "wal"
            assert (await connection.execute(text("PRAGMA foreign_keys"))).scalar() == 1
            assert (await connection.execute(text("PRAGMA busy_timeout"))).scalar() == 30000
    finally:
        await db.close()


async def _backend_pid(db) -> int:
    async with db.engine.connect() as connection:
        return (await connection.execute(text("SELECT pg_backend_pid()"))).scalar()


async def test_a_connection_in_steady_use_is_not_pinged_an_idle_dead_one_is_replaced(pg_url, monkeypatch):
    db = Database(pg_url)
    pings = []
    try:
        pid = await _backend_pid(db)
        async with db.engine.connect() as connection:
            adapted = (await connection.get_raw_connection()).dbapi_connection
        original = type(adapted).ping
        monkeypatch.setattr(type(adapted), "ping", lambda self: pings.append(1) or original(self))
        assert await _backend_pid(db) == pid and pings == []  # back from the pool a moment ago: no round trip
        other = Database(pg_url)
        async with other.engine.connect() as connection:
            await connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        await other.close()
        monkeypatch.setattr(storage_db, "IDLE_PING_SECONDS", -1.0)  # every connection counts as idle
        assert await _backend_pid(db) != pid  # the dead connection was pinged and replaced, no error
        assert pings
    finally:
        await db.close()


@pytest.mark.slow  # about 1 s (setup and call)
def test_importing_storage_and_the_queue_attaches_nothing_to_the_global_session(tmp_path):
    import subprocess
    import sys

    code = (
        "import patchbay.core.storage.base as base, patchbay.core.jobs.queue as queue\n"
        "from sqlalchemy import event\nfrom sqlalchemy.orm import Session\n"
        "hooks = [('do_orm_execute', base._scope_queries_to_tenant), ('before_flush', base._stamp_tenant_on_writes),"
        " ('after_commit', queue._wake_after_commit), ('after_rollback', queue._forget_after_rollback)]\n"
        "print(sum(event.contains(Session, name, fn) for name, fn in hooks))\n"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path).stdout.strip() == "0"
    )  # outside the checkout: the installed package


async def test_each_database_guards_its_own_sessions(sqlite_url, tmp_path):
    """The tenancy guard is attached to each Database's own session class: a session of another
    Database (or a plain SQLAlchemy session) carries no listener of the first."""
    from sqlalchemy.orm import Session

    from patchbay.core.jobs.queue import JobQueue, _wake_after_commit
    from patchbay.core.storage.base import _stamp_tenant_on_writes

    first, second = Database(sqlite_url), Database(f"sqlite+aiosqlite:///{tmp_path / 'other.db'}")
    try:
        JobQueue(first)
        assert first.session_class is not second.session_class
        # what a session of each class will call (event.contains answers by the id of a class, which a
        # collected class of an earlier Database may have had)
        mine, theirs, plain = first.session_class(), second.session_class(), Session()
        assert _stamp_tenant_on_writes in list(mine.dispatch.before_flush) and _stamp_tenant_on_writes in list(theirs.dispatch.before_flush)
        assert _wake_after_commit in list(mine.dispatch.after_commit)
        assert _wake_after_commit not in list(theirs.dispatch.after_commit)
        assert _stamp_tenant_on_writes not in list(plain.dispatch.before_flush)
        assert isinstance(first.session().sync_session, first.session_class)
    finally:
        await first.close()
        await second.close()
