"""Rolling upgrades: ``patchbay db upgrade`` of a new version runs while processes of the previous
release still serve, so every migration since that release must be one the old code survives
(expand now, contract in a later release): no table or column of the old schema dropped, renamed
or retyped, and every column added to an old table nullable or with a server default, so the old
code's inserts, which do not name it, still succeed.

The schema of the previous release is made by upgrading an empty database to the revisions that
release shipped; the new revisions are then applied on top, as ``db upgrade`` would, and the two
schemas are compared. A real insert in the old release's shape (only its columns) closes the test.
"""

from __future__ import annotations

import asyncio
import os
import uuid

import asyncpg
import pytest
import sqlalchemy as sa
from alembic import command

from patchbay.core.storage.db import Database
from patchbay.core.storage.migrate import alembic_config, upgrade

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)

#: the head revisions of each release, newest last; add a release's heads when it ships
RELEASED_HEADS = {
    "0.1.0": ("core_0001", "connections_0002", "data_0001", "flows_0001", "identity_0001", "tenancy_0003", "webhooks_0001"),
}
PREVIOUS_RELEASE = list(RELEASED_HEADS)[-1]


def _schema(sync) -> dict[str, dict[str, dict]]:
    inspector = sa.inspect(sync)
    return {table: {column["name"]: column for column in inspector.get_columns(table)} for table in inspector.get_table_names() if table != "alembic_version"}


async def _old_then_new(url: str) -> tuple[dict, dict, Database]:
    db = Database(url)
    async with db.engine.begin() as connection:
        await connection.run_sync(lambda sync: [command.upgrade(alembic_config(sync), head) for head in RELEASED_HEADS[PREVIOUS_RELEASE]])
    async with db.engine.connect() as connection:
        old = await connection.run_sync(_schema)
    await upgrade(db)
    async with db.engine.connect() as connection:
        new = await connection.run_sync(_schema)
    return old, new, db


async def _admin(url: str, statement: str) -> None:
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://").rpartition("/")[0] + "/postgres")
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database_url(request, tmp_path):
    """An empty database (no schema at all) on SQLite, and on PostgreSQL when configured."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
        return
    url = os.environ.get("PATCHBAY_TEST_DATABASE_URL")
    if not url:
        pytest.skip("PostgreSQL tests need PATCHBAY_TEST_DATABASE_URL")
    name = f"pbt_up_{uuid.uuid4().hex[:10]}"
    asyncio.run(_admin(url, f'CREATE DATABASE "{name}"'))
    try:
        yield f"{url.rpartition('/')[0]}/{name}"
    finally:
        asyncio.run(_admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.mark.slow  # about 1 s (setup and call)
async def test_migrations_since_the_previous_release_are_ones_its_code_survives(empty_database_url):
    old, new, db = await _old_then_new(empty_database_url)
    try:
        problems = []
        for table, columns in old.items():
            if table not in new:
                problems.append(f"table {table} of {PREVIOUS_RELEASE} was dropped or renamed")
                continue
            for name, column in columns.items():
                now = new[table].get(name)
                if now is None:
                    problems.append(f"{table}.{name} of {PREVIOUS_RELEASE} was dropped or renamed")
                elif str(now["type"]) != str(column["type"]):
                    problems.append(f"{table}.{name} changed type {column['type']} -> {now['type']}")
                elif column["nullable"] and not now["nullable"]:
                    problems.append(f"{table}.{name} became NOT NULL: the old code may still write NULL")
            for name, column in new[table].items():
                if name not in columns and not column["nullable"] and column.get("default") is None:
                    problems.append(f"{table}.{name} was added NOT NULL without a server default: the old code's inserts fail")
        assert problems == []

        # the old release's insert, naming only its own columns, into a table the new one changed
        async with db.engine.begin() as connection:
            await connection.execute(
                sa.text(
                    "INSERT INTO workspaces (id, name, slug, plan, settings, created_at, updated_at) VALUES ('w-old', 'Old', 'old', 'free', '{}', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                )
            )
            assert (await connection.execute(sa.text("SELECT name FROM workspaces WHERE id = 'w-old'"))).scalar_one() == "Old"
    finally:
        await db.close()
