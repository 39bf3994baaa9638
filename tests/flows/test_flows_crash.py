"""A process killed in the middle of an execution leaves it resumable: after the job's lease runs out
another worker completes it, reusing the steps already done instead of repeating them."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.models import FlowExecution, FlowExecutionStep
from patchbay.core.jobs.models import Job
from patchbay.core.testing import create_workspace_with_key
from patchbay.testing import Receiver

SCRIPT = Path(__file__).with_name("flows_crash_worker.py")


def _plugin():
    spec = importlib.util.spec_from_file_location("flows_crash_worker", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BlockPlugin()


async def _steps(app, execution_id):
    async with app[SERVICES].db.session() as session:
        return list(
            (await session.scalars(select(FlowExecutionStep).where(FlowExecutionStep.execution_id == execution_id).order_by(FlowExecutionStep.position))).all()
        )


@pytest.mark.both_databases
@pytest.mark.slow  # a worker process killed
async def test_a_killed_process_leaves_the_execution_resumable(aiohttp_client, make_app, database_url, tmp_path, drain_jobs):
    receiver = await Receiver().start()
    client = await aiohttp_client(make_app(database_url=database_url, plugins=[_plugin()]))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    h = ws["headers"]
    steps = [
        {"id": "notify", "type": "http", "method": "POST", "url": receiver.url + "/hook", "body": {"n": "{{ trigger.n }}"}},
        {"id": "block", "type": "test.block"},
        {"id": "done", "type": "transform", "output": "{{ steps.notify.output.status }}"},
    ]
    flow = await (await client.post("/connect/v1/flows", json={"name": "crash", "steps": steps}, headers=h)).json()
    await client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES],
            session,
            [{"workspace_id": ws["workspace_id"], "flow_id": flow["id"], "version": 1, "trigger_source": "webhook", "trigger_payload": {"n": 5}}],
        )
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), database_url, str(tmp_path / "worker")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=SCRIPT.parent,
        env={**os.environ, "FLOWS_BLOCK": "1"},
    )
    try:
        assert (await asyncio.to_thread(process.stdout.readline)).strip() == "ready"
        for _ in range(400):  # until the first step is checkpointed and the second one blocks
            if await _steps(app, execution_id):
                break
            await asyncio.sleep(0.05)
        assert [s.step_id for s in await _steps(app, execution_id)] == ["notify"]
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    async with app[SERVICES].db.session() as session:
        assert (await session.get(FlowExecution, execution_id)).status == "running"
    # the dead worker's lease (2 s) runs out; make that now rather than wait
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(Job).where(Job.kind == "flows.execute").values(lease_until=Job.created_at))
    await drain_jobs(app[SERVICES])
    async with app[SERVICES].db.session() as session:
        execution = await session.get(FlowExecution, execution_id, populate_existing=True)
    assert execution.status == "completed" and execution.attempts == 2 and execution.duration_ms is not None
    done = await _steps(app, execution_id)
    assert [(s.step_id, s.status) for s in done] == [("notify", "completed"), ("block", "completed"), ("done", "completed")]
    assert done[2].output == 200
    assert len(receiver.requests) == 1  # the side effect was not repeated
    await receiver.close()
