"""Executions run in batches: one job runs many executions at once, each exactly once; one that
fails does not fail the others; plans of published versions are cached and a new version runs its
new steps; http steps share one keep-alive session."""

from __future__ import annotations

import asyncio
import threading

import pytest
from aiohttp import web
from sqlalchemy import event, func, select

from patchbay import hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.flows import runner
from patchbay.core.flows.engine import EXECUTIONS_PER_JOB, create_executions, run_execution
from patchbay.core.flows.models import Flow, FlowExecution, FlowExecutionStep
from patchbay.core.flows.service import publish
from patchbay.core.jobs.models import Job
from patchbay.core.testing import create_workspace_with_key

#: bound of every wait on the held render; far above what three light executions take
WAIT_SECONDS = 20


class OddOutputs:
    """Plugin step types: ``test.unstorable`` answers what JSON cannot hold."""

    class Unstorable:
        side_effects = False

        async def run(self, context, config):
            return {"a set": {1, 2}}

    @hookimpl
    def register_step_types(self, register):
        register("test.unstorable", self.Unstorable())


@pytest.fixture
async def batch_client(aiohttp_client, make_app, database_url):
    return await aiohttp_client(make_app(database_url=database_url, plugins=[OddOutputs()]))


@pytest.fixture
async def target(aiohttp_server):
    """Counts POSTs per Idempotency-Key and the client connections they came on."""
    keys: list[str] = []
    peers: set[object] = set()

    async def hook(request):
        await request.read()
        keys.append(",".join(request.headers.getall("Idempotency-Key")))  # one, unless the step sent two
        peers.add(request.transport.get_extra_info("peername"))
        return web.json_response({"ok": True})

    async def fail(request):
        return web.Response(status=503, text="down")

    app = web.Application()
    app.router.add_post("/hook", hook)
    app.router.add_post("/fail", fail)
    server = await aiohttp_server(app)
    return {"url": str(server.make_url("")), "keys": keys, "peers": peers}


async def _published(app, workspace_id: str, steps) -> str:
    async with app[SERVICES].db.transaction(tenant=workspace_id) as session:
        flow = Flow(name="batch", steps=steps, status="draft", version=1)
        session.add(flow)
        await session.flush()
        await publish(session, flow)
    return flow.id


async def _create(app, workspace_id: str, flow_id: str, payloads, version: int = 1) -> list[str]:
    rows = [{"workspace_id": workspace_id, "flow_id": flow_id, "version": version, "trigger_source": "webhook", "trigger_payload": p} for p in payloads]
    async with app[SERVICES].db.transaction() as session:
        return await create_executions(app[SERVICES], session, rows)


async def _statuses(app, ids) -> dict[str, tuple[str, int, str | None]]:
    async with app[SERVICES].db.session() as session:
        rows = (
            await session.execute(select(FlowExecution.id, FlowExecution.status, FlowExecution.attempts, FlowExecution.error).where(FlowExecution.id.in_(ids)))
        ).all()
    return {row.id: (row.status, row.attempts, row.error) for row in rows}


@pytest.mark.both_databases
@pytest.mark.slow  # about 1 s (setup and call)
async def test_one_job_runs_a_batch_of_executions_each_exactly_once(batch_client, target, drain_jobs):
    app = batch_client.server.app
    ws = (await create_workspace_with_key(app))["workspace_id"]
    steps = [
        {"id": "shape", "type": "transform", "output": {"n": "{{ trigger.n }}"}},
        {"id": "notify", "type": "http", "method": "POST", "url": target["url"] + "/hook", "body": "{{ steps.shape.output }}"},
    ]
    flow_id = await _published(app, ws, steps)
    count = EXECUTIONS_PER_JOB + 20
    ids = await _create(app, ws, flow_id, [{"n": n} for n in range(count)])
    async with app[SERVICES].db.session() as session:
        jobs = (await session.scalars(select(Job.payload).where(Job.kind == "flows.execute"))).all()
    assert len(jobs) == 2 and sorted(len(job["executionIds"]) for job in jobs) == [20, EXECUTIONS_PER_JOB]
    assert await drain_jobs(app[SERVICES], kinds=("flows.execute",)) == 2
    assert set(await _statuses(app, ids)) == set(ids)
    assert set((await _statuses(app, ids)).values()) == {("completed", 1, None)}
    assert sorted(target["keys"]) == sorted(f"{execution_id}:notify" for execution_id in ids)
    # the same job delivered again (a lease that ran out after the work): nothing runs twice
    async with app[SERVICES].db.transaction() as session:
        job = await session.scalar(select(Job).where(Job.kind == "flows.execute").limit(1))
        job.status, job.run_at = "queued", job.created_at
    assert await drain_jobs(app[SERVICES], kinds=("flows.execute",)) == 1
    assert len(target["keys"]) == count
    async with app[SERVICES].db.session() as session:
        stored = await session.scalar(select(func.count()).select_from(FlowExecutionStep).where(FlowExecutionStep.execution_id.in_(ids)))
    assert stored == 2 * count


@pytest.mark.both_databases
async def test_a_failing_execution_does_not_fail_the_others_of_its_batch(batch_client, target, drain_jobs):
    app = batch_client.server.app
    ws = (await create_workspace_with_key(app))["workspace_id"]
    steps = [
        {"id": "odd", "type": "transform", "output": "{{ 1 // trigger.divisor }}"},
        {"id": "notify", "type": "http", "method": "POST", "url": target["url"] + "{{ trigger.path }}", "body": {}},
    ]
    flow_id = await _published(app, ws, steps)
    unstorable = await _published(app, ws, [{"id": "bad", "type": "test.unstorable"}])
    ok = await _create(app, ws, flow_id, [{"divisor": 1, "path": "/hook"}] * 4)
    broken_template, refused = await _create(app, ws, flow_id, [{"divisor": 0, "path": "/hook"}, {"divisor": 1, "path": "/fail"}])
    (unstored,) = await _create(app, ws, unstorable, [{}])
    await drain_jobs(app[SERVICES], kinds=("flows.execute",))
    statuses = await _statuses(app, [*ok, broken_template, refused, unstored])
    assert all(statuses[execution_id] == ("completed", 1, None) for execution_id in ok)
    assert statuses[broken_template][0] == "failed" and "ZeroDivisionError" in statuses[broken_template][2]
    assert statuses[refused][0] == "failed" and "HTTP 503" in statuses[refused][2]
    assert statuses[unstored][0] == "failed" and "storing the outcome failed" in statuses[unstored][2]
    assert sorted(target["keys"]) == sorted(f"{execution_id}:notify" for execution_id in ok)


async def test_plans_are_cached_per_version_and_a_new_version_runs_its_new_steps(batch_client):
    app = batch_client.server.app
    ws = await create_workspace_with_key(app)
    steps = [{"id": "say", "type": "transform", "output": "one {{ trigger.n }}"}]
    flow_id = await _published(app, ws["workspace_id"], steps)
    first = await _create(app, ws["workspace_id"], flow_id, [{"n": 1}])
    assert await run_execution(app[SERVICES], first[0]) == "completed"
    reads: list[str] = []
    listen = lambda *args: reads.append(args[2]) if args[2].startswith("SELECT flow_versions") else None  # noqa: E731
    event.listen(app[SERVICES].db.engine.sync_engine, "before_cursor_execute", listen)
    try:
        (again,) = await _create(app, ws["workspace_id"], flow_id, [{"n": 2}])
        assert await run_execution(app[SERVICES], again) == "completed"
        assert reads == []  # version 1's plan came from the cache
        response = await batch_client.patch(
            f"/connect/v1/flows/{flow_id}", json={"steps": [{"id": "say", "type": "transform", "output": "two {{ trigger.n }}"}]}, headers=ws["headers"]
        )
        assert response.status == 200, await response.text()
        response = await batch_client.post(f"/connect/v1/flows/{flow_id}/publish", headers=ws["headers"])
        assert response.status == 201 and (await response.json())["version"] == 2
        newer = await _create(app, ws["workspace_id"], flow_id, [{"n": 3}] * 5, version=2)
        (older,) = await _create(app, ws["workspace_id"], flow_id, [{"n": 4}], version=1)
        assert await asyncio.gather(*(run_execution(app[SERVICES], execution_id) for execution_id in newer)) == ["completed"] * 5
        assert len(reads) == 1  # five executions missed version 2 at once: one load
        assert await run_execution(app[SERVICES], older) == "completed"
    finally:
        event.remove(app[SERVICES].db.engine.sync_engine, "before_cursor_execute", listen)
    async with app[SERVICES].db.session() as session:
        outputs = dict(
            (
                await session.execute(
                    select(FlowExecutionStep.execution_id, FlowExecutionStep.output).where(FlowExecutionStep.execution_id.in_([again, *newer, older]))
                )
            ).all()
        )
    assert outputs == {again: "one 2", **dict.fromkeys(newer, "two 3"), older: "one 4"}


async def test_http_steps_share_one_keep_alive_session(batch_client, target):
    app = batch_client.server.app
    ws = (await create_workspace_with_key(app))["workspace_id"]
    flow_id = await _published(app, ws, [{"id": "notify", "type": "http", "method": "POST", "url": target["url"] + "/hook", "body": {}}])
    for execution_id in await _create(app, ws, flow_id, [{}] * 5):
        assert await run_execution(app[SERVICES], execution_id) == "completed"
    assert len(target["keys"]) == 5 and len(target["peers"]) == 1  # one connection, kept alive between calls


async def test_an_idempotency_key_of_the_step_is_kept_whatever_its_case(batch_client, target):
    app = batch_client.server.app
    ws = (await create_workspace_with_key(app))["workspace_id"]
    step = {"id": "notify", "type": "http", "method": "POST", "url": target["url"] + "/hook", "headers": {"idempotency-key": "{{ trigger.key }}"}, "body": {}}
    flow_id = await _published(app, ws, [step])
    (execution_id,) = await _create(app, ws, flow_id, [{"key": "mine-1"}])
    assert await run_execution(app[SERVICES], execution_id) == "completed"
    assert target["keys"] == ["mine-1"]


@pytest.mark.both_databases
@pytest.mark.slow  # about 1 s (setup and call)
async def test_a_job_queued_before_batches_still_runs_its_execution(batch_client, drain_jobs):
    app = batch_client.server.app
    ws = (await create_workspace_with_key(app))["workspace_id"]
    flow_id = await _published(app, ws, [{"id": "say", "type": "transform", "output": "{{ trigger.n }}"}])
    (execution_id,) = await _create(app, ws, flow_id, [{"n": 7}])
    async with app[SERVICES].db.transaction() as session:
        job = await session.scalar(select(Job).where(Job.kind == "flows.execute"))
        job.payload = {"executionId": execution_id}  # the payload of one execution per job
    assert await drain_jobs(app[SERVICES], kinds=("flows.execute",)) == 1
    assert (await _statuses(app, [execution_id]))[execution_id] == ("completed", 1, None)


async def test_a_slow_render_does_not_hold_up_the_renders_of_other_executions(batch_client, monkeypatch):
    """A render held in its worker thread (as a heavy template would hold it, but released by the
    test rather than by the machine's speed) while three other executions render and finish."""
    app = batch_client.server.app
    ws = (await create_workspace_with_key(app))["workspace_id"]
    holding, released, waits = threading.Event(), threading.Event(), []
    render_all = runner._render_all

    def held_while_flagged(items):
        if any(context["trigger"].get("hold") for _, context, _ in items):
            holding.set()
            waits.append(released.wait(WAIT_SECONDS))
        return render_all(items)

    monkeypatch.setattr(runner, "_render_all", held_while_flagged)
    # a template that is not a bare path: it renders in a worker thread (a bare path renders on the loop)
    flow_id = await _published(app, ws, [{"id": "say", "type": "transform", "output": "n={{ trigger.n }}"}])
    (slow,) = await _create(app, ws, flow_id, [{"n": "slow", "hold": True}])
    quick = await _create(app, ws, flow_id, [{"n": n} for n in range(3)])
    spinning = asyncio.create_task(run_execution(app[SERVICES], slow))
    assert await asyncio.to_thread(holding.wait, WAIT_SECONDS)
    try:
        for execution_id in quick:  # one after another, each rendered while the slow one is held
            assert await asyncio.wait_for(run_execution(app[SERVICES], execution_id), WAIT_SECONDS) == "completed"
        assert not spinning.done()
    finally:
        released.set()
    assert await asyncio.wait_for(spinning, WAIT_SECONDS) == "completed"
    assert waits == [True]  # released by the test, not by the wait's bound


async def test_a_step_of_path_templates_renders_on_the_loop_while_every_render_thread_is_held(batch_client, monkeypatch):
    """A step whose templates are bare paths into the data needs no worker thread: it runs while
    the renders in threads are all held; one whose path misses still renders there, and fails."""
    app = batch_client.server.app
    ws = (await create_workspace_with_key(app))["workspace_id"]
    released, threaded = threading.Event(), []
    render_all = runner._render_all

    def held(items):
        threaded.append(len(items))
        released.wait(WAIT_SECONDS)
        return render_all(items)

    monkeypatch.setattr(runner, "_render_all", held)
    steps = [
        {"id": "shape", "type": "transform", "output": {"email": "{{ trigger.email | lower }}", "n": "{{ trigger.n }}", "fixed": 1}},
        {"id": "again", "type": "transform", "output": ["{{ steps.shape.output.email }}", "{{ steps.shape.output['n'] }}"]},
    ]
    flow_id = await _published(app, ws, steps)
    light = await _create(app, ws, flow_id, [{"email": "ADA@EXAMPLE.COM", "n": n} for n in range(3)])
    (missing,) = await _create(app, ws, flow_id, [{"n": "no email"}])
    try:
        blocked = asyncio.create_task(run_execution(app[SERVICES], missing))
        for execution_id in light:
            assert await asyncio.wait_for(run_execution(app[SERVICES], execution_id), WAIT_SECONDS) == "completed"
        assert not blocked.done()
    finally:
        released.set()
    assert await asyncio.wait_for(blocked, WAIT_SECONDS) == "failed"
    assert threaded == [1]  # only the step whose path missed went to a thread
    async with app[SERVICES].db.session() as session:
        rows = (
            await session.execute(select(FlowExecutionStep.execution_id, FlowExecutionStep.step_id, FlowExecutionStep.input, FlowExecutionStep.output))
        ).all()
    records = {(row.execution_id, row.step_id): (row.input, row.output) for row in rows}
    assert records[(light[2], "shape")] == ({"output": {"email": "ada@example.com", "n": 2, "fixed": 1}}, {"email": "ada@example.com", "n": 2, "fixed": 1})
    assert records[(light[2], "again")][1] == ["ada@example.com", 2]
    assert (await _statuses(app, [missing]))[missing][2].startswith("step 'shape' failed: template '{{ trigger.email | lower }}' failed")
