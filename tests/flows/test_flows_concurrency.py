"""A workspace's limit of executions run at once: the executions beyond it wait ``pending`` (not
failed) and run as others end, while another workspace's executions run meanwhile."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from sqlalchemy import func, select

from patchbay import hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.engine import JOB_KIND, create_executions
from patchbay.core.flows.models import FlowExecution
from patchbay.core.jobs.models import Job
from patchbay.core.testing import create_workspace_with_key

API = "/connect/v1"


class _Gate:
    """Holds each run until opened; counts the runs in flight per workspace and their most."""

    side_effects = False

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.now: Counter[str] = Counter()
        self.most: Counter[str] = Counter()
        self.changed = asyncio.Event()

    async def run(self, context, config):
        ws = context.workspace_id
        self.now[ws] += 1
        self.most[ws] = max(self.most[ws], self.now[ws])
        self.changed.set()
        try:
            await self.open.wait()
        finally:
            self.now[ws] -= 1
        return {"ok": True}


class _GatePlugin:
    def __init__(self, gate) -> None:
        self.gate = gate

    @hookimpl
    def register_step_types(self, register):
        register("test.gate", self.gate)


async def _statuses(app, workspace_id) -> Counter:
    async with app[SERVICES].db.session() as session:
        rows = await session.execute(
            select(FlowExecution.status, func.count()).where(FlowExecution.workspace_id == workspace_id).group_by(FlowExecution.status)
        )
        return Counter(dict(rows.all()))


async def _jobs(app, workspace_id) -> int:
    async with app[SERVICES].db.session() as session:
        return await session.scalar(select(func.count()).where(Job.kind == JOB_KIND, Job.workspace_id == workspace_id))


@pytest.mark.both_databases
async def test_a_workspace_over_its_limit_queues_and_does_not_starve_another(aiohttp_client, make_app, database_url):
    gate = _Gate()
    client = await aiohttp_client(make_app(database_url=database_url, plugins=[_GatePlugin(gate)], background=True))
    app = client.server.app
    limited, other = await create_workspace_with_key(app), await create_workspace_with_key(app)
    response = await client.put(f"{API}/flows/settings", json={"maxConcurrentExecutions": 2}, headers=limited["headers"])
    assert response.status == 200 and (await response.json())["maxConcurrentExecutions"] == 2
    rows = []
    for ws, count in ((limited, 6), (other, 3)):
        flow = await (await client.post(f"{API}/flows", json={"name": "gate", "steps": [{"id": "g", "type": "test.gate"}]}, headers=ws["headers"])).json()
        assert (await client.post(f"{API}/flows/{flow['id']}/publish", headers=ws["headers"])).status == 201
        rows += [{"workspace_id": ws["workspace_id"], "flow_id": flow["id"], "version": 1, "trigger_source": "webhook"}] * count
    async with app[SERVICES].db.transaction() as session:
        await create_executions(app[SERVICES], session, [dict(row) for row in rows])
    a, b = limited["workspace_id"], other["workspace_id"]

    async with asyncio.timeout(30):
        while not (gate.now[a] == 2 and gate.now[b] == 3):
            gate.changed.clear()
            await gate.changed.wait()
        while await _jobs(app, a) < 3:  # the waiting ones were offered again at least twice
            await asyncio.sleep(0.05)
    assert gate.now[a] == 2 and gate.now[b] == 3  # the other workspace runs all of its own meanwhile
    assert await _statuses(app, a) == Counter({"running": 2, "pending": 4})
    assert await _statuses(app, b) == Counter({"running": 3})

    gate.open.set()
    async with asyncio.timeout(60):
        while (await _statuses(app, a)) != Counter({"completed": 6}):
            await asyncio.sleep(0.05)
    assert await _statuses(app, b) == Counter({"completed": 3})
    assert gate.most[a] == 2 and gate.most[b] == 3
