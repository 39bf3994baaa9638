"""Concurrent executions share their table lookups and checkpoints: each still gets its own row or
error, never another workspace's, and every checkpointed step is stored."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import event, func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.flows.engine import create_executions, run_execution
from patchbay.core.flows.models import Flow, FlowExecutionStep
from patchbay.core.tables.service import create_table, lookup_rows, upsert_row
from patchbay.core.testing import create_workspace_with_key

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)


async def _customers(app, workspace_id: str, tier: str, count: int) -> None:
    async with app[SERVICES].db.transaction(tenant=workspace_id) as session:
        await create_table(
            session,
            workspace_id=workspace_id,
            name="Customers",
            slug="customers",
            columns=[{"name": "email", "type": "text"}, {"name": "score", "type": "number"}],
        )
        for n in range(count):
            await upsert_row(
                session, workspace_id=workspace_id, table_slug="customers", external_key=f"{tier}{n}", data={"email": f"user{n}@example.com", "score": n}
            )


async def test_lookup_rows_answers_each_lookup_in_place(flows_client, flows_ws):
    app, ws = flows_client.server.app, flows_ws["workspace_id"]
    await _customers(app, ws, "a", 3)
    async with app[SERVICES].db.transaction(tenant=ws) as session:  # a newer row with the same email wins
        await upsert_row(session, workspace_id=ws, table_slug="customers", external_key="late", data={"email": "user1@example.com"})
    lookups = [
        ("customers", "email", "user2@example.com"),
        ("missing", "email", "x"),
        ("customers", "score", "0"),
        ("customers", "email", "nobody@example.com"),
        ("customers", "unknown", "x"),
        ("customers", "email", "user1@example.com"),
        ("customers", "score", "not a number"),
        ("customers", "external_key", "a0"),
    ]
    async with app[SERVICES].db.session(tenant=ws) as session:
        found = await lookup_rows(session, workspace_id=ws, lookups=lookups)
    assert found[0]["external_key"] == "a2"
    assert isinstance(found[1], NotFound)
    assert found[2]["external_key"] == "a0"
    assert found[3] is None
    assert isinstance(found[4], Invalid)  # an unknown column of a typed table
    assert found[5]["external_key"] == "late"
    assert found[6] is None
    assert found[7]["data"]["email"] == "user0@example.com"


async def test_concurrent_lookups_get_their_own_rows_and_never_another_workspaces(flows_client, flows_ws):
    app = flows_client.server.app
    mine = flows_ws["workspace_id"]
    theirs = (await create_workspace_with_key(app))["workspace_id"]
    await _customers(app, mine, "m", 20)
    await _customers(app, theirs, "t", 10)
    runner = app[SERVICES].flow_runner
    asks = [(workspace, n) for n in range(20) for workspace in (mine, theirs)]
    statements: list[str] = []
    listen = lambda *args: statements.append(args[2])  # noqa: E731
    event.listen(app[SERVICES].db.engine.sync_engine, "before_cursor_execute", listen)
    try:
        answers = await asyncio.gather(*(runner.lookup(workspace, "customers", "email", f"user{n}@example.com") for workspace, n in asks))
    finally:
        event.remove(app[SERVICES].db.engine.sync_engine, "before_cursor_execute", listen)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) <= 6  # 40 lookups of two workspaces: the tables, the row ids, the rows of each
    for (workspace, n), row in zip(asks, answers, strict=True):
        if workspace == mine:
            assert row["external_key"] == f"m{n}"
        elif n < 10:
            assert row["external_key"] == f"t{n}"
        else:
            assert row is None  # only my workspace has these emails
    failures = await asyncio.gather(
        runner.lookup(mine, "nope", "email", "x"), runner.lookup(mine, "customers", "email", "user3@example.com"), return_exceptions=True
    )
    assert isinstance(failures[0], NotFound) and failures[1]["external_key"] == "m3"


@pytest.mark.slow  # about 2 s (setup and call)
async def test_concurrent_executions_with_lookups_and_checkpoints_all_complete(flows_client, flows_ws):
    app, ws = flows_client.server.app, flows_ws["workspace_id"]
    await _customers(app, ws, "c", 30)
    steps = [
        {"id": "find", "type": "table.lookup", "table": "customers", "column": "email", "value": "{{ trigger.email }}"},
        {"id": "wait", "type": "delay", "seconds": 0},  # side effects: checkpointed
        {"id": "echo", "type": "transform", "output": "{{ trigger.email }} {{ steps.find.output.external_key }}"},
    ]
    async with app[SERVICES].db.transaction(tenant=ws) as session:
        flow = Flow(name="batch", steps=steps, status="draft", version=1)
        session.add(flow)
    rows = [
        {"workspace_id": ws, "flow_id": flow.id, "steps": steps, "trigger_source": "webhook", "trigger_payload": {"email": f"user{n}@example.com"}}
        for n in range(30)
    ]
    async with app[SERVICES].db.transaction() as session:
        ids = await create_executions(app[SERVICES], session, rows)
    assert await asyncio.gather(*(run_execution(app[SERVICES], execution_id) for execution_id in ids)) == ["completed"] * 30
    async with app[SERVICES].db.session() as session:
        outputs = (await session.scalars(select(FlowExecutionStep.output).where(FlowExecutionStep.step_id == "echo"))).all()
        stored = await session.scalar(select(func.count()).select_from(FlowExecutionStep).where(FlowExecutionStep.execution_id.in_(ids)))
    assert stored == 90  # the checkpointed steps of every execution, once each
    assert sorted(outputs) == sorted(f"user{n}@example.com c{n}" for n in range(30))


async def test_a_last_step_with_side_effects_is_stored_by_the_finish_alone(flows_client, flows_ws):
    app, ws = flows_client.server.app, flows_ws["workspace_id"]
    steps = [{"id": "first", "type": "delay", "seconds": 0}, {"id": "last", "type": "delay", "seconds": 0}]
    async with app[SERVICES].db.transaction(tenant=ws) as session:
        flow = Flow(name="last", steps=steps, status="draft", version=1)
        session.add(flow)
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES], session, [{"workspace_id": ws, "flow_id": flow.id, "steps": steps, "trigger_source": "webhook"}]
        )
    commits: list[object] = []
    listen = commits.append
    event.listen(app[SERVICES].db.engine.sync_engine, "commit", listen)
    try:
        assert await run_execution(app[SERVICES], execution_id) == "completed"
    finally:
        event.remove(app[SERVICES].db.engine.sync_engine, "commit", listen)
    assert len(commits) == 3  # the start, the checkpoint after "first", the finish with "last" (no checkpoint of its own)
    async with app[SERVICES].db.session() as session:
        stored = (await session.scalars(select(FlowExecutionStep.step_id).where(FlowExecutionStep.execution_id == execution_id))).all()
    assert sorted(stored) == ["first", "last"]


async def test_lookups_of_json_values_match_as_a_single_lookup_does(flows_client, flows_ws):
    app, ws = flows_client.server.app, flows_ws["workspace_id"]
    async with app[SERVICES].db.transaction(tenant=ws) as session:
        await create_table(session, workspace_id=ws, name="Things", slug="things", columns=[])
        await upsert_row(session, workspace_id=ws, table_slug="things", external_key="one", data={"flag": True, "tags": ["a", "b"], "meta": {"k": 1}, "n": 2.5})
        await upsert_row(session, workspace_id=ws, table_slug="things", external_key="two", data={"flag": False, "tags": ["b"], "meta": {"k": 2}, "n": 3})
    lookups = [
        ("things", "flag", True),
        ("things", "flag", False),
        ("things", "tags", ["a", "b"]),
        ("things", "meta", {"k": 2}),
        ("things", "n", 2.5),
        ("things", "n", 3),
        ("things", "meta", {"k": 3}),
        ("things", "missing", "x"),
    ]
    async with app[SERVICES].db.session(tenant=ws) as session:
        found = await lookup_rows(session, workspace_id=ws, lookups=lookups)
    assert [row and row["external_key"] for row in found] == ["one", "two", "one", "two", "one", "two", None, None]
