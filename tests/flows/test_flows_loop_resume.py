"""A loop resumed after its process died runs only the items that had not completed: each item's
call to a real local server happens once, except the item that was in flight, which runs again."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from aiohttp import web
from sqlalchemy import func, select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows import durable
from patchbay.core.flows.engine import create_executions, run_execution
from patchbay.core.flows.models import FlowExecution, FlowExecutionStep, FlowLoopItem
from patchbay.core.jobs.models import Job
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow

API = "/connect/v1"
CRASH_WORKER = Path(__file__).with_name("flows_crash_worker.py")


class ItemServer:
    """A local HTTP server counting the calls per item; the first call for ``hold`` waits until
    ``release`` (the item in flight when the process dies)."""

    def __init__(self, hold: str | None = None, hooks: dict | None = None) -> None:
        self.calls: Counter[str] = Counter()
        #: by item, a coroutine function the call awaits first
        self.hooks = hooks or {}
        self.hold = hold
        self.held = asyncio.Event()
        self.release = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> ItemServer:
        app = web.Application()
        app.router.add_post("/item", self._item)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/item"
        return self

    async def _item(self, request: web.Request) -> web.Response:
        item = (await request.json())["item"]
        self.calls[item] += 1
        if item in self.hooks:
            await self.hooks[item]()
        if item == self.hold and self.calls[item] == 1:
            self.held.set()
            await self.release.wait()
        return web.json_response({"item": item, "call": self.calls[item]})

    async def close(self) -> None:
        self.release.set()
        await self._runner.cleanup()


def _loop(url: str, concurrency: int = 1) -> list[dict]:
    post = {"id": "post", "type": "http", "method": "POST", "url": url, "body": {"item": "{{ loop.item }}"}}
    return [{"id": "each", "type": "loop", "items": "{{ trigger.lines }}", "concurrency": concurrency, "steps": [post]}]


async def _queued(client, headers, workspace_id, steps, items) -> str:
    app = client.server.app
    flow = await (await client.post(f"{API}/flows", json={"name": "loop resume", "steps": steps}, headers=headers)).json()
    assert (await client.post(f"{API}/flows/{flow['id']}/publish", headers=headers)).status == 201
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES],
            session,
            [{"workspace_id": workspace_id, "flow_id": flow["id"], "version": 1, "trigger_source": "webhook", "trigger_payload": {"lines": items}}],
        )
    return execution_id


async def _stored_items(app, execution_id) -> list[int]:
    async with app[SERVICES].db.session() as session:
        return sorted(await session.scalars(select(FlowLoopItem.item_index).where(FlowLoopItem.execution_id == execution_id)))


async def _until_stored(app, execution_id, indexes: list[int], seconds: float = 15) -> None:
    """Wait (at most ``seconds``) until the loop's stored items are ``indexes``; past that the test
    goes on, and what the resumed run repeats shows what was missing."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            while await _stored_items(app, execution_id) != indexes:
                await asyncio.sleep(0.02)


async def _resume_after_lease_ran_out(app, execution_id, drain_jobs) -> FlowExecution:
    """The dead process's job is gone and the execution's lease ran out (made now rather than
    waited for): the reaper resumes it, and the resumed execution runs to its end."""
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(Job).where(Job.kind == "flows.execute").values(status="failed"))
        await session.execute(update(FlowExecution).where(FlowExecution.id == execution_id).values(lease_until=utcnow() - timedelta(seconds=1)))
    assert (await durable.reap_executions(app[SERVICES]))["resumed"] == 1
    await drain_jobs(app[SERVICES])
    async with app[SERVICES].db.session() as session:
        return await session.get(FlowExecution, execution_id, populate_existing=True)


async def _loop_output(app, execution_id) -> dict:
    async with app[SERVICES].db.session() as session:
        return await session.scalar(select(FlowExecutionStep.output).where(FlowExecutionStep.execution_id == execution_id, FlowExecutionStep.step_id == "each"))


@pytest.mark.both_databases
@pytest.mark.slow  # a worker process killed
async def test_a_loop_resumed_after_its_process_was_killed_runs_only_the_items_that_had_not_completed(flows_client, database_url, tmp_path, drain_jobs):
    items = [f"i{n}" for n in range(8)]
    server = await ItemServer(hold="i5").start()
    app = flows_client.server.app
    ws = await create_workspace_with_key(app)
    execution_id = await _queued(flows_client, ws["headers"], ws["workspace_id"], _loop(server.url), items)
    process = subprocess.Popen([sys.executable, str(CRASH_WORKER), database_url, str(tmp_path / "worker")], stdout=subprocess.PIPE, text=True, env=os.environ)
    try:
        assert (await asyncio.to_thread(process.stdout.readline)).strip() == "ready"
        await asyncio.wait_for(server.held.wait(), 30)  # items 0-4 completed, item 5 in flight
        await _until_stored(app, execution_id, [0, 1, 2, 3, 4])  # their checkpoints are written within a short window
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert (await _steps_stored(app, execution_id)) == 0  # the loop had not ended: no record of it yet

    ended = await _resume_after_lease_ran_out(app, execution_id, drain_jobs)
    assert ended.status == "completed", ended.error
    assert server.calls == {**dict.fromkeys(items, 1), "i5": 2}  # the completed items' calls happened once; the one in flight ran again
    output = await _loop_output(app, execution_id)
    assert (output["count"], output["completed"]) == (8, 8)
    assert [(r["index"], r["status"], r.get("reused", False)) for r in output["results"]] == [(n, "completed", n < 5) for n in range(8)]
    assert [r["output"]["body"]["item"] for r in output["results"]] == items
    assert [r["output"]["body"]["call"] for r in output["results"]] == [1, 1, 1, 1, 1, 2, 1, 1]
    assert await _stored_items(app, execution_id) == []  # the loop's record holds the results now
    await server.close()


async def _steps_stored(app, execution_id) -> int:
    async with app[SERVICES].db.session() as session:
        return await session.scalar(select(func.count()).select_from(FlowExecutionStep).where(FlowExecutionStep.execution_id == execution_id))


@pytest.mark.both_databases
async def test_a_resumed_concurrent_loop_reruns_only_the_item_in_flight_when_its_run_stopped(flows_client, drain_jobs):
    items = [f"i{n}" for n in range(6)]
    server = await ItemServer(hold="i1").start()
    app = flows_client.server.app
    services = app[SERVICES]
    ws = await create_workspace_with_key(app)
    execution_id = await _queued(flows_client, ws["headers"], ws["workspace_id"], _loop(server.url, concurrency=2), items)
    run = asyncio.create_task(run_execution(services, execution_id))  # the execution's job, run here
    await asyncio.wait_for(server.held.wait(), 10)
    await _until_stored(app, execution_id, [0, 2, 3, 4, 5])  # item 1 holds one slot, the other slot runs every other item
    run.cancel()  # the run stops where it is, as when its process dies
    with pytest.raises(asyncio.CancelledError):
        await run
    server.release.set()

    ended = await _resume_after_lease_ran_out(app, execution_id, drain_jobs)
    assert ended.status == "completed", ended.error
    assert server.calls == {**dict.fromkeys(items, 1), "i1": 2}
    output = await _loop_output(app, execution_id)
    assert [(r["status"], r.get("reused", False)) for r in output["results"]] == [("completed", n != 1) for n in range(6)]
    assert [r["output"]["body"]["item"] for r in output["results"]] == items
    assert await _stored_items(app, execution_id) == []
    await server.close()


@pytest.mark.both_databases
async def test_completed_items_are_stored_in_batches_and_deleted_with_the_loops_record(flows_client, drain_jobs):
    items = [f"i{n}" for n in range(40)]
    app = flows_client.server.app
    stored_after_the_loop: list[list[int]] = []

    async def look() -> None:
        stored_after_the_loop.append(await _stored_items(app, execution_id))

    server = await ItemServer(hooks={"after": look}).start()
    services = app[SERVICES]
    ws = await create_workspace_with_key(app)
    after = {"id": "after", "type": "http", "method": "POST", "url": server.url, "body": {"item": "after"}}
    execution_id = await _queued(flows_client, ws["headers"], ws["workspace_id"], [*_loop(server.url, concurrency=8), after], items)
    writes: list[int] = []
    write = services.flow_runner.loop_items._write

    async def counted(rows):
        writes.append(len(rows))
        await write(rows)

    services.flow_runner.loop_items._write = counted
    await drain_jobs(services)
    async with services.db.session() as session:
        ended = await session.get(FlowExecution, execution_id)
    assert ended.status == "completed", ended.error
    assert sum(writes) == len(items) and len(writes) < len(items) / 4, writes  # a few transactions, not one per item
    assert stored_after_the_loop == [[]]  # deleted when the loop's record was checkpointed, before the next step ran
    assert server.calls == {**dict.fromkeys(items, 1), "after": 1}
    await server.close()
