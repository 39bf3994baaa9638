"""Cron schedules: validation, timezones, and one execution per tick across two processes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.models import FlowExecution, FlowSchedule
from patchbay.core.flows.schedules import next_run, run_schedules
from patchbay.core.testing import create_workspace_with_key

SCRIPT = Path(__file__).with_name("flows_schedule_process.py")


async def _published_flow(client, h):
    flow = await (
        await client.post("/connect/v1/flows", json={"name": "s", "steps": [{"id": "t", "type": "transform", "output": "{{ trigger.report }}"}]}, headers=h)
    ).json()
    await client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)
    return flow["id"]


def test_next_run_follows_the_timezone():
    after = datetime(2026, 7, 1, 6, 30, tzinfo=UTC)
    assert next_run("0 9 * * *", "UTC", after) == datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
    assert next_run("0 9 * * *", "Europe/Paris", after) == datetime(2026, 7, 1, 7, 0, tzinfo=UTC)  # 09:00 CEST
    assert next_run("*/15 * * * *", "UTC", after) == datetime(2026, 7, 1, 6, 45, tzinfo=UTC)


async def test_schedule_routes_validate_and_patch(client, workspace):
    flows_client, flows_ws = client, workspace  # SQLite only: the storage paths run on both databases elsewhere
    h = flows_ws["headers"]
    flow_id = await _published_flow(flows_client, h)
    for body, field in (
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "* * * *"}, "cron"),
        ({"cron": "* * * * *", "timezone": "Mars/Base"}, "timezone"),
        ({"cron": "* * * * *", "payload": [1]}, "payload"),
        ({}, "cron"),
    ):
        response = await flows_client.post(f"/connect/v1/flows/{flow_id}/schedules", json=body, headers=h)
        assert response.status == 400 and field in (await response.json())["message"], body
    created = await flows_client.post(
        f"/connect/v1/flows/{flow_id}/schedules", json={"cron": "0 9 * * 1", "timezone": "Europe/Paris", "payload": {"report": "weekly"}}, headers=h
    )
    assert created.status == 201
    schedule = await created.json()
    assert schedule["timezone"] == "Europe/Paris" and schedule["isActive"] is True and schedule["payload"] == {"report": "weekly"}
    assert schedule["nextRunAt"].endswith(":00:00.000Z")
    paused = await (await flows_client.patch(f"/connect/v1/flows/{flow_id}/schedules/{schedule['id']}", json={"isActive": False}, headers=h)).json()
    assert paused["isActive"] is False and paused["nextRunAt"] is None and paused["cron"] == "0 9 * * 1"
    default_tz = await (await flows_client.post(f"/connect/v1/flows/{flow_id}/schedules", json={"cron": "*/5 * * * *"}, headers=h)).json()
    assert default_tz["timezone"] == "UTC" and default_tz["payload"] == {}
    listed = await (await flows_client.get(f"/connect/v1/flows/{flow_id}/schedules", headers=h)).json()
    assert len(listed) == 2
    assert (await flows_client.delete(f"/connect/v1/flows/{flow_id}/schedules/{schedule['id']}", headers=h)).status == 200
    assert len(await (await flows_client.get(f"/connect/v1/flows/{flow_id}/schedules", headers=h)).json()) == 1


async def _due_schedule(client, h, flow_id, start):
    schedule = await (await client.post(f"/connect/v1/flows/{flow_id}/schedules", json={"cron": "* * * * *", "payload": {"report": "r"}}, headers=h)).json()
    async with client.server.app[SERVICES].db.transaction() as session:
        await session.execute(update(FlowSchedule).where(FlowSchedule.id == schedule["id"]).values(next_run_at=start))
    return schedule["id"]


def _moments(start):
    # three ticks, each looked at twice by each runner
    return [start + timedelta(minutes=tick, seconds=1) for tick in range(3) for _ in range(2)]


async def _check_once_per_tick(app, flow_id, start, fired, drain_jobs):
    async with app[SERVICES].db.session() as session:
        executions = list((await session.scalars(select(FlowExecution).where(FlowExecution.flow_id == flow_id))).all())
    assert fired == len(executions) == 3
    assert sorted(e.trigger_payload["scheduledAt"] for e in executions) == [
        (start + timedelta(minutes=n)).isoformat(timespec="milliseconds").replace("+00:00", "Z") for n in range(3)
    ]
    assert all(e.trigger_source == "schedule" and e.version == 1 and e.trigger_payload["report"] == "r" for e in executions)
    await drain_jobs(app[SERVICES])
    async with app[SERVICES].db.session() as session:
        assert {e.status for e in (await session.scalars(select(FlowExecution))).all()} == {"completed"}


@pytest.mark.slow  # a second process
async def test_a_schedule_on_two_processes_fires_once_per_tick(aiohttp_client, make_app, pg_url, tmp_path, drain_jobs):
    client = await aiohttp_client(make_app(database_url=pg_url))
    app = client.server.app
    h = (await create_workspace_with_key(app))["headers"]
    flow_id = await _published_flow(client, h)
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=10)
    await _due_schedule(client, h, flow_id, start)
    moments = _moments(start)
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), pg_url, str(tmp_path / "other"), *[m.isoformat() for m in moments]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=SCRIPT.parent,
    )
    try:
        assert (await asyncio.to_thread(process.stdout.readline)).strip() == "ready"
        process.stdin.write("go\n")
        process.stdin.flush()

        async def here() -> int:
            return sum([(await run_schedules(app[SERVICES], now=moment))["fired"] for moment in moments])

        mine, theirs = await asyncio.gather(here(), asyncio.to_thread(process.stdout.readline))
    finally:
        process.kill()
        process.wait()
    await _check_once_per_tick(app, flow_id, start, mine + json.loads(theirs)["fired"], drain_jobs)


@pytest.mark.both_databases
async def test_two_apps_on_one_database_fire_once_per_tick(flows_client, flows_ws, make_app, database_url, drain_jobs):
    app, h = flows_client.server.app, flows_ws["headers"]
    other = make_app(database_url=database_url)
    flow_id = await _published_flow(flows_client, h)
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=10)
    await _due_schedule(flows_client, h, flow_id, start)

    async def runner(target) -> int:
        return sum([(await run_schedules(target[SERVICES], now=moment))["fired"] for moment in _moments(start)])

    try:
        fired = sum(await asyncio.gather(runner(app), runner(other), runner(app)))
    finally:
        await other[SERVICES].db.close()
    await _check_once_per_tick(app, flow_id, start, fired, drain_jobs)


async def test_missed_ticks_fire_once_and_paused_flows_do_not_fire(client, workspace):
    flows_client, flows_ws = client, workspace  # SQLite only: the storage paths run on both databases elsewhere
    app, h = flows_client.server.app, flows_ws["headers"]
    flow_id = await _published_flow(flows_client, h)
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(hours=2)
    schedule_id = await _due_schedule(flows_client, h, flow_id, start)
    assert (await run_schedules(app[SERVICES]))["fired"] == 1  # two hours of missed minutes: one run, not 120
    assert (await run_schedules(app[SERVICES]))["fired"] == 0
    async with app[SERVICES].db.session() as session:
        schedule = await session.get(FlowSchedule, schedule_id)
    assert schedule.next_run_at > datetime.now(UTC)
    await flows_client.patch(f"/connect/v1/flows/{flow_id}/toggle", headers=h)
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(FlowSchedule).where(FlowSchedule.id == schedule_id).values(next_run_at=start))
    assert (await run_schedules(app[SERVICES]))["fired"] == 0
