"""The table service behind the flow steps table.upsert and table.lookup, on both databases."""

import asyncio

import pytest

from patchbay.core.errors import Invalid, NotFound
from patchbay.core.tables.service import create_table, lookup_row, upsert_row
from patchbay.core.workspaces.models import Workspace

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)

COLUMNS = [
    {"name": "email", "type": "text"},
    {"name": "score", "type": "number"},
    {"name": "vip", "type": "boolean"},
    {"name": "born", "type": "date"},
    {"name": "tags", "type": "json"},
]


async def workspaces(db, *names):
    async with db.transaction() as session:
        rows = [Workspace(name=name, slug=name.lower(), plan="enterprise") for name in names]
        session.add_all(rows)
    return [row.id for row in rows]


async def test_upsert_creates_then_merges_by_external_key(db):
    (ws,) = await workspaces(db, "One")
    async with db.transaction(tenant=ws) as session:
        await create_table(session, workspace_id=ws, name="Leads", slug="leads", columns=COLUMNS)
    async with db.transaction(tenant=ws) as session:
        first = await upsert_row(session, workspace_id=ws, table_slug="leads", external_key="k1", data={"email": "a@x.io", "score": "7"})
    async with db.transaction(tenant=ws) as session:
        second = await upsert_row(session, workspace_id=ws, table_slug="leads", external_key="k1", data={"vip": True})
    assert first["id"] == second["id"]
    assert first["data"] == {"email": "a@x.io", "score": 7}  # the numeric string became a number
    assert second["data"] == {"email": "a@x.io", "score": 7, "vip": True}  # merged, not replaced
    assert second["external_key"] == "k1"


async def test_upsert_rejects_a_bad_value_naming_the_column(db):
    (ws,) = await workspaces(db, "One")
    async with db.transaction(tenant=ws) as session:
        await create_table(session, workspace_id=ws, name="Leads", slug="leads", columns=COLUMNS)
        for data, column in (({"score": "lots"}, "score"), ({"born": "yesterday"}, "born"), ({"vip": "maybe"}, "vip"), ({"nope": 1}, "nope")):
            with pytest.raises(Invalid) as error:
                await upsert_row(session, workspace_id=ws, table_slug="leads", external_key="k", data=data)
            assert f"'{column}'" in error.value.message


async def test_lookup_returns_the_most_recently_updated_match_typed_by_column(db):
    (ws,) = await workspaces(db, "One")
    async with db.transaction(tenant=ws) as session:
        await create_table(session, workspace_id=ws, name="Leads", slug="leads", columns=COLUMNS)
    for key, score in (("a", 5), ("b", 5), ("c", 9)):
        async with db.transaction(tenant=ws) as session:
            await upsert_row(session, workspace_id=ws, table_slug="leads", external_key=key, data={"score": score, "vip": key == "c", "tags": ["t", key]})
        await asyncio.sleep(0.005)
    async with db.transaction(tenant=ws) as session:  # "a" becomes the most recently updated score-5 row
        await upsert_row(session, workspace_id=ws, table_slug="leads", external_key="a", data={"email": "late@x.io"})
    async with db.session(tenant=ws) as session:
        assert (await lookup_row(session, workspace_id=ws, table_slug="leads", column="score", value="5"))["external_key"] == "a"
        assert (await lookup_row(session, workspace_id=ws, table_slug="leads", column="score", value=9))["external_key"] == "c"
        assert (await lookup_row(session, workspace_id=ws, table_slug="leads", column="vip", value="true"))["external_key"] == "c"
        assert (await lookup_row(session, workspace_id=ws, table_slug="leads", column="tags", value=["t", "b"]))["external_key"] == "b"
        assert (await lookup_row(session, workspace_id=ws, table_slug="leads", column="external_key", value="b"))["data"]["score"] == 5
        assert await lookup_row(session, workspace_id=ws, table_slug="leads", column="score", value="6") is None
        assert await lookup_row(session, workspace_id=ws, table_slug="leads", column="score", value="not a number") is None
        with pytest.raises(Invalid):
            await lookup_row(session, workspace_id=ws, table_slug="leads", column="unknown", value="x")


async def test_tables_of_another_workspace_are_invisible(db):
    mine, theirs = await workspaces(db, "One", "Two")
    async with db.transaction(tenant=theirs) as session:
        await create_table(session, workspace_id=theirs, name="Secret", slug="secret", columns=[])
        await upsert_row(session, workspace_id=theirs, table_slug="secret", external_key="k", data={"x": 1})
    async with db.session(tenant=mine) as session:
        with pytest.raises(NotFound):
            await lookup_row(session, workspace_id=mine, table_slug="secret", column="x", value=1)
    async with db.transaction(tenant=mine) as session:  # the same slug is free in another workspace
        await create_table(session, workspace_id=mine, name="Secret", slug="secret", columns=[])
        assert await lookup_row(session, workspace_id=mine, table_slug="secret", column="x", value=1) is None
