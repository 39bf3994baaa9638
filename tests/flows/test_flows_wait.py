"""The ``wait`` step parks the execution in the database (``waiting`` until ``resume_at``), not in a
task: a ``patchbay worker`` killed with SIGKILL while it waits loses nothing, and another worker
process resumes it when it is due."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.models import FlowExecution, FlowExecutionStep
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow

API = "/connect/v1"


async def _execution(app, execution_id) -> FlowExecution:
    async with app[SERVICES].db.session() as session:
        return await session.get(FlowExecution, execution_id, populate_existing=True)


async def _until(app, execution_id, statuses, timeout=60.0) -> FlowExecution:
    async with asyncio.timeout(timeout):
        while (execution := await _execution(app, execution_id)).status not in statuses:
            await asyncio.sleep(0.05)
    return execution


async def _steps(app, execution_id):
    async with app[SERVICES].db.session() as session:
        rows = await session.scalars(select(FlowExecutionStep).where(FlowExecutionStep.execution_id == execution_id).order_by(FlowExecutionStep.position))
        return [(row.step_id, row.status, row.output) for row in rows]


def _worker(database_url: str, data_dir) -> subprocess.Popen:
    environ = {
        **os.environ,
        "PATCHBAY_DATABASE_URL": database_url,
        "PATCHBAY_DATA_DIR": str(data_dir),
        "PATCHBAY_SECRET_KEY": "test-secret-key-0123456789",
        "PATCHBAY_ALLOW_INSECURE_TARGETS": "true",
    }
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("patchbay")), "worker", "--workers", "4"], env=environ, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )


async def _published(client, headers, steps) -> dict:
    flow = await (await client.post(f"{API}/flows", json={"name": "waits", "steps": steps}, headers=headers)).json()
    response = await client.post(f"{API}/flows/{flow['id']}/publish", headers=headers)
    assert response.status == 201, await response.text()
    return flow


@pytest.mark.both_databases
@pytest.mark.slow  # two worker processes, one killed
async def test_a_wait_outlives_a_killed_worker_and_resumes_in_another(aiohttp_client, make_app, database_url, tmp_path):
    client = await aiohttp_client(make_app(database_url=database_url))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    steps = [
        {"id": "pause", "type": "wait", "seconds": 3},
        {"id": "after", "type": "transform", "output": "{{ steps.pause.output.waited }}"},
    ]
    flow = await _published(client, ws["headers"], steps)
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES], session, [{"workspace_id": ws["workspace_id"], "flow_id": flow["id"], "version": 1, "trigger_source": "webhook"}]
        )
    first = _worker(database_url, tmp_path / "one")
    try:
        assert (await asyncio.to_thread(first.stdout.readline)).strip() == "patchbay worker running"
        parked = await _until(app, execution_id, ("waiting", "completed", "failed"))
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert parked.status == "waiting" and parked.lease_until is None
    assert utcnow() < parked.resume_at <= utcnow() + timedelta(seconds=3)
    assert [step[:2] for step in await _steps(app, execution_id)] == [("pause", "completed")]

    second = _worker(database_url, tmp_path / "two")
    try:
        assert (await asyncio.to_thread(second.stdout.readline)).strip() == "patchbay worker running"
        ended = await _until(app, execution_id, ("completed", "failed"))
    finally:
        second.send_signal(signal.SIGKILL)
        second.wait()
    assert ended.status == "completed", ended.error
    assert ended.resume_at is None and ended.lease_until is None
    assert [step[:2] for step in await _steps(app, execution_id)] == [("pause", "completed"), ("after", "completed")]
    assert (await _steps(app, execution_id))[1][2] is True


@pytest.mark.both_databases
async def test_wait_until_a_time_parks_until_then(flows_client, flows_ws, drain_jobs):
    app = flows_client.server.app
    until = (utcnow() + timedelta(hours=2)).isoformat()
    flow = await _published(flows_client, flows_ws["headers"], [{"id": "pause", "type": "wait", "until": until}])
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES], session, [{"workspace_id": flows_ws["workspace_id"], "flow_id": flow["id"], "version": 1, "trigger_source": "webhook"}]
        )
    await drain_jobs(app[SERVICES])
    execution = await _execution(app, execution_id)
    assert execution.status == "waiting"
    assert abs((execution.resume_at - utcnow()).total_seconds() - 7200) < 60
    listed = await (await flows_client.get(f"{API}/flows/{flow['id']}/executions?status=waiting", headers=flows_ws["headers"])).json()
    assert [item["id"] for item in listed["data"]] == [execution_id]


@pytest.mark.both_databases
async def test_a_wait_needs_seconds_or_until_at_publish(flows_client, flows_ws):
    h = flows_ws["headers"]
    flow = await (await flows_client.post(f"{API}/flows", json={"name": "w", "steps": [{"id": "w", "type": "wait"}]}, headers=h)).json()
    response = await flows_client.post(f"{API}/flows/{flow['id']}/publish", headers=h)
    assert response.status == 400
    assert "seconds" in await response.text()
