"""No execution stays ``running`` after its process died: running executions hold a lease renewed
while they run, and the ``reap-executions`` job resumes (or, for a caller's inline run, fails) those
whose lease ran out."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

from patchbay import hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.flows import durable
from patchbay.core.flows.engine import create_executions, run_execution
from patchbay.core.flows.models import FlowExecution, FlowExecutionStep
from patchbay.core.jobs.models import Job
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import new_id, utcnow
from patchbay.testing import Receiver

API = "/connect/v1"
CRASH_WORKER = Path(__file__).with_name("flows_crash_worker.py")


def _block_plugin():
    spec = importlib.util.spec_from_file_location("flows_crash_worker", CRASH_WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BlockPlugin()


async def _execution(app, execution_id) -> FlowExecution:
    async with app[SERVICES].db.session() as session:
        return await session.get(FlowExecution, execution_id, populate_existing=True)


async def _steps(app, execution_id):
    async with app[SERVICES].db.session() as session:
        rows = await session.scalars(select(FlowExecutionStep).where(FlowExecutionStep.execution_id == execution_id).order_by(FlowExecutionStep.position))
        return [(row.step_id, row.status) for row in rows]


async def _publish(client, headers, steps) -> dict:
    flow = await (await client.post(f"{API}/flows", json={"name": "durable", "steps": steps}, headers=headers)).json()
    assert (await client.post(f"{API}/flows/{flow['id']}/publish", headers=headers)).status == 201
    return flow


async def _queue(app, workspace_id, flow_id) -> str:
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES], session, [{"workspace_id": workspace_id, "flow_id": flow_id, "version": 1, "trigger_source": "webhook", "trigger_payload": {}}]
        )
    return execution_id


@pytest.mark.both_databases
@pytest.mark.slow  # a worker process killed
async def test_the_reaper_resumes_an_execution_whose_process_was_killed(aiohttp_client, make_app, database_url, tmp_path, drain_jobs):
    receiver = await Receiver().start()
    client = await aiohttp_client(make_app(database_url=database_url, plugins=[_block_plugin()]))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    steps = [
        {"id": "notify", "type": "http", "method": "POST", "url": receiver.url + "/hook", "body": {}},
        {"id": "block", "type": "test.block"},
        {"id": "done", "type": "transform", "output": "ok"},
    ]
    flow = await _publish(client, ws["headers"], steps)
    execution_id = await _queue(app, ws["workspace_id"], flow["id"])
    process = subprocess.Popen(
        [sys.executable, str(CRASH_WORKER), database_url, str(tmp_path / "worker")], stdout=subprocess.PIPE, text=True, env={**os.environ, "FLOWS_BLOCK": "1"}
    )
    try:
        assert (await asyncio.to_thread(process.stdout.readline)).strip() == "ready"
        async with asyncio.timeout(30):
            while not await _steps(app, execution_id):
                await asyncio.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    running = await _execution(app, execution_id)
    assert running.status == "running" and running.lease_until > utcnow()
    assert await durable.reap_executions(app[SERVICES]) == {"resumed": 0, "failed": 0, "woken": 0}  # its lease has not run out
    # the job that carried it is gone for good (its attempts spent), and the lease runs out: make that now rather than wait
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(Job).where(Job.kind == "flows.execute").values(status="failed"))
        await session.execute(update(FlowExecution).where(FlowExecution.id == execution_id).values(lease_until=utcnow() - timedelta(seconds=1)))
    assert await durable.reap_executions(app[SERVICES]) == {"resumed": 1, "failed": 0, "woken": 0}
    assert (await _execution(app, execution_id)).status == "pending"
    await drain_jobs(app[SERVICES])
    ended = await _execution(app, execution_id)
    assert ended.status == "completed" and ended.lease_until is None
    assert await _steps(app, execution_id) == [("notify", "completed"), ("block", "completed"), ("done", "completed")]
    assert len(receiver.requests) == 1  # the step that had run was not repeated
    await receiver.close()


class _Gate:
    """A step type that waits until the test opens it."""

    side_effects = False

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.open = asyncio.Event()

    async def run(self, context, config):
        self.entered.set()
        await self.open.wait()
        return {"passed": True}


class _GatePlugin:
    def __init__(self, gate: _Gate) -> None:
        self.gate = gate

    @hookimpl
    def register_step_types(self, register):
        register("test.gate", self.gate)


@pytest.mark.both_databases
async def test_a_running_execution_renews_its_lease_and_is_not_reaped(aiohttp_client, make_app, database_url):
    gate = _Gate()
    client = await aiohttp_client(make_app(database_url=database_url, plugins=[_GatePlugin(gate)]))
    app = client.server.app
    services = app[SERVICES]
    services.flow_runner.lease_seconds = 0.6
    ws = await create_workspace_with_key(app)
    flow = await _publish(client, ws["headers"], [{"id": "gate", "type": "test.gate"}])
    execution_id = await _queue(app, ws["workspace_id"], flow["id"])
    run = asyncio.create_task(run_execution(services, execution_id))
    await asyncio.wait_for(gate.entered.wait(), 10)
    first = (await _execution(app, execution_id)).lease_until
    async with asyncio.timeout(10):  # renewed every 0.2 s
        while (await _execution(app, execution_id)).lease_until <= first:
            await asyncio.sleep(0.05)
    assert (await durable.reap_executions(services))["resumed"] == 0
    gate.open.set()
    assert await asyncio.wait_for(run, 10) == "completed"
    ended = await _execution(app, execution_id)
    assert ended.status == "completed" and ended.lease_until is None
    assert services.flow_runner.running == set()


@pytest.mark.both_databases
async def test_the_reaper_fails_an_inline_run_whose_process_died_and_wakes_a_lost_wait(flows_client, flows_ws, drain_jobs):
    app = flows_client.server.app
    flow = await _publish(flows_client, flows_ws["headers"], [{"id": "t", "type": "transform", "output": 1}])
    long_ago = utcnow() - timedelta(minutes=5)
    invoked, waiting = new_id(), new_id()
    async with app[SERVICES].db.transaction(tenant=flows_ws["workspace_id"]) as session:
        session.add(FlowExecution(id=invoked, flow_id=flow["id"], version=1, status="running", trigger_source="invoke", attempts=1, lease_until=long_ago))
        session.add(FlowExecution(id=waiting, flow_id=flow["id"], version=1, status="waiting", trigger_source="webhook", attempts=1, resume_at=long_ago))
    assert await durable.reap_executions(app[SERVICES]) == {"resumed": 0, "failed": 1, "woken": 1}
    failed = await _execution(app, invoked)
    assert failed.status == "failed" and failed.error == durable.DIED and failed.lease_until is None
    await drain_jobs(app[SERVICES])
    assert (await _execution(app, waiting)).status == "completed"


@pytest.mark.both_databases
async def test_an_inline_run_the_reaper_fails_starts_the_error_flow_and_a_test_run_does_not(flows_client, flows_ws):
    app, headers = flows_client.server.app, flows_ws["headers"]
    flow = await _publish(flows_client, headers, [{"id": "t", "type": "transform", "output": 1}])
    handler = await _publish(flows_client, headers, [{"id": "h", "type": "transform", "output": "{{ trigger.error }}"}])
    assert (await flows_client.put(f"{API}/flows/settings", json={"errorFlowId": handler["id"]}, headers=headers)).status == 200
    long_ago = utcnow() - timedelta(minutes=5)
    invoked, tested = new_id(), new_id()
    async with app[SERVICES].db.transaction(tenant=flows_ws["workspace_id"]) as session:
        for execution_id, source in ((invoked, "invoke"), (tested, "test")):
            session.add(
                FlowExecution(id=execution_id, flow_id=flow["id"], version=1, status="running", trigger_source=source, attempts=1, lease_until=long_ago)
            )
    assert (await durable.reap_executions(app[SERVICES]))["failed"] == 2
    async with app[SERVICES].db.session() as session:
        started = (await session.execute(select(FlowExecution.trigger_payload).where(FlowExecution.flow_id == handler["id"]))).scalars().all()
    assert started == [{"executionId": invoked, "flowId": flow["id"], "flowName": "durable", "stepId": None, "error": durable.DIED}]
