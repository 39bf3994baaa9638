"""Every attempt of one alert delivery (an ``alerts.deliver`` job, retried by the queue) carries the
same bytes, on SQLite and PostgreSQL: a local receiver refuses the first attempt and accepts the
second. A flow alert keeps the flow's name as it was when the execution ended (a rename between
attempts changed the second body); an operator event keeps its nested details as stored."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from patchbay.core.alerts import operator_events
from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.testing import drain
from patchbay.core.jobs.models import Job
from patchbay.core.jobs.queue import JobContext
from patchbay.core.testing import create_workspace_with_key
from patchbay.plugins.alert_channels import DeliveryFailed


async def _subscribe(client, ws, receiver, events):
    response = await client.post("/connect/v1/alerts", json={"channel": "webhook", "target": receiver.url, "eventTypes": events}, headers=ws["headers"])
    assert response.status == 201, await response.text()


async def _attempt(app, number: int) -> None:
    """Attempt ``number`` of the one queued alert delivery, its payload read from the database as
    the queue reads it for every attempt."""
    async with app[SERVICES].db.session() as session:
        (job,) = (await session.scalars(select(Job).where(Job.kind == "alerts.deliver"))).all()
    await app[SERVICES].jobs.kinds[job.kind].handler(JobContext(app[SERVICES], job.id, job.kind, dict(job.payload), number, job.max_attempts, job.workspace_id))


def _one_body(receiver) -> dict:
    assert len(receiver.requests) == 2
    first, second = (request["body"] for request in receiver.requests)
    assert first == second, (first, second)
    return json.loads(first)


async def test_every_attempt_of_a_flow_alert_carries_the_same_bytes(aiohttp_client, make_app, database_url, receivers):
    receiver = await receivers([500, 200])
    client = await aiohttp_client(make_app(database_url=database_url))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    await _subscribe(client, ws, receiver, ["flow.failed"])
    steps = [{"id": "boom", "type": "transform", "output": "{{ trigger.missing }}"}]
    flow = await (await client.post("/connect/v1/flows", json={"name": "Nightly sync", "steps": steps}, headers=ws["headers"])).json()
    await client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=ws["headers"])
    async with app[SERVICES].db.transaction() as session:
        await create_executions(
            app[SERVICES],
            session,
            [
                {
                    "workspace_id": ws["workspace_id"],
                    "flow_id": flow["id"],
                    "version": 1,
                    "trigger_source": "webhook",
                    "trigger_payload": {"b": 1, "a": {"d": 2, "c": 3}},
                }
            ],
        )
    await drain(app[SERVICES], kinds=("flows.execute",))
    with pytest.raises(DeliveryFailed):
        await _attempt(app, 1)
    renamed = await client.patch(f"/connect/v1/flows/{flow['id']}", json={"name": "Renamed between attempts"}, headers=ws["headers"])
    assert renamed.status == 200, await renamed.text()
    await _attempt(app, 2)
    alert = _one_body(receiver)
    assert alert["event"] == "flow.failed" and alert["flowId"] == flow["id"] and alert["flowName"] == "Nightly sync"


async def test_every_attempt_of_an_operator_event_carries_the_same_bytes(aiohttp_client, make_app, database_url, receivers):
    receiver = await receivers([500, 200])
    client = await aiohttp_client(make_app(database_url=database_url))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    await _subscribe(client, ws, receiver, [operator_events.CONNECTION_INVALID])
    details = {"zulu": "z", "alpha": {"yankee": [{"x-ray": 1, "bravo": None}], "charlie": "é"}, "mike": 2}
    async with app[SERVICES].db.transaction() as session:
        operator_events.record(
            session, operator_events.CONNECTION_INVALID, "Connection c-1 needs reconnecting", workspace_id=ws["workspace_id"], details=details
        )
    await drain(app[SERVICES], kinds=(operator_events.FANOUT_JOB,))
    with pytest.raises(DeliveryFailed):
        await _attempt(app, 1)
    await _attempt(app, 2)
    alert = _one_body(receiver)
    assert alert["event"] == operator_events.CONNECTION_INVALID and alert["details"] == details
