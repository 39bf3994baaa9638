"""The flow engine: executions per second of a three-step flow (transform, table.lookup, http POST
to a local server) run by one process's job workers on SQLite and on PostgreSQL, against the raw
job-queue throughput (a no-op job through the same workers) measured in the same run; and the
latency from an inbound webhook (a signed Meta leadgen POST to /webhook/facebook) to the first step
of the flow it starts.

    python benchmarks/flows.py [--executions 2000] [--jobs 3000] [--concurrency 64] [--latency 30]

PostgreSQL runs when PATCHBAY_TEST_DATABASE_URL (or PATCHBAY_BENCH_PG_URL) names a server: a
scratch database is created and dropped. The workers, the web server that receives the webhooks and
the client that sends them run in this one process; the http step's target (a bare aiohttp handler
answering 200) runs in a process of its own. Every execution must end ``completed`` and the target
must have received exactly one POST per execution, else the run fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import tempfile
import time
import uuid

import aiohttp
import asyncpg
from aiohttp import web
from sqlalchemy import func, select

from patchbay import hookimpl
from patchbay.core.app import create_app
from patchbay.core.appkeys import DB, JOBS
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.models import Flow, FlowExecution, FlowTriggerSubscription
from patchbay.core.flows.service import publish
from patchbay.core.jobs.worker import Worker
from patchbay.core.settings import load_settings
from patchbay.core.tables.service import create_table, upsert_row
from patchbay.core.testing import create_workspace_with_key
from patchbay.providers.meta.testing import leadgen_payload, meta_signature
from patchbay.testing import add_connection

APP_SECRET = "bench-app-secret"
TARGET_PORT = 0  # set by main() once the target process is up


def three_steps() -> list[dict]:
    return [
        {"id": "shape", "type": "transform", "output": {"email": "{{ trigger.email | lower }}", "amount": "{{ trigger.amount }}"}},
        {"id": "customer", "type": "table.lookup", "table": "customers", "column": "email", "value": "{{ steps.shape.output.email }}"},
        {"id": "notify", "type": "http", "method": "POST", "url": f"http://127.0.0.1:{TARGET_PORT}/hook",
         "body": {"email": "{{ steps.shape.output.email }}", "tier": "{{ steps.customer.output.data.tier }}"}},
    ]


def _target(ready, port_out) -> None:
    """The http step's target: counts POSTs, answers 200; ``GET /count`` answers the count."""
    count = 0

    async def hook(request: web.Request) -> web.Response:
        nonlocal count
        await request.read()
        count += 1
        return web.Response(text="ok")

    async def counted(request: web.Request) -> web.Response:
        return web.json_response({"count": count})

    async def serve() -> None:
        app = web.Application()
        app.router.add_post("/hook", hook)
        app.router.add_get("/count", counted)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port_out.value = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()
        await asyncio.Event().wait()

    asyncio.run(serve())


async def _target_count(http: aiohttp.ClientSession) -> int:
    async with http.get(f"http://127.0.0.1:{TARGET_PORT}/count") as response:
        return (await response.json())["count"]


class Marks:
    """A step type that notes when it ran, keyed by the lead id of the trigger."""

    def __init__(self) -> None:
        self.seen: dict[str, float] = {}
        self.arrived = asyncio.Event()

    async def run(self, context, config):
        self.seen[str(config.get("key"))] = time.perf_counter()
        self.arrived.set()
        return {"ok": True}

    side_effects = False

    @hookimpl
    def register_step_types(self, register):
        register("bench.mark", self)


def _settings(url: str, data_dir: str, concurrency: int):
    environ = {"PATCHBAY_DATABASE_URL": url, "PATCHBAY_DATA_DIR": data_dir, "PATCHBAY_SECRET_KEY": "bench-secret-key-0123456789",
               "PATCHBAY_SCHEDULER": "false", "PATCHBAY_WORKERS": "0", "PATCHBAY_ALLOW_INSECURE_TARGETS": "true", "PATCHBAY_LOG_LEVEL": "WARNING"}  # fmt: skip
    settings = load_settings({}, environ)
    settings.providers = {"facebook": {"webhook_secret": APP_SECRET, "api_base_url": "http://127.0.0.1:9"}}
    return settings


async def _until(predicate, timeout: float = 300.0, every: float = 0.02) -> None:
    deadline = time.perf_counter() + timeout
    while not await predicate():
        if time.perf_counter() > deadline:
            raise TimeoutError("benchmark did not finish in time")
        await asyncio.sleep(every)


async def _queue_baseline(app, jobs: int, concurrency: int) -> float:
    done = 0
    finished = asyncio.Event()

    async def noop(context) -> None:
        nonlocal done
        done += 1
        if done == jobs:
            finished.set()

    app[JOBS].register("bench.noop", noop)
    async with app[DB].transaction() as session:
        for start in range(0, jobs, 1000):
            await app[JOBS].enqueue_many(session, "bench.noop", [{"n": n} for n in range(start, min(jobs, start + 1000))])
    worker = Worker(app, app[JOBS], concurrency=concurrency, poll_seconds=0.01)
    began = time.perf_counter()
    task = asyncio.create_task(worker.run())
    await asyncio.wait_for(finished.wait(), 300)
    elapsed = time.perf_counter() - began
    worker.stop()
    await task
    return jobs / elapsed


async def _flow(app, workspace_id: str, steps, name: str) -> str:
    async with app[DB].transaction(tenant=workspace_id) as session:
        flow = Flow(name=name, steps=steps, status="draft", version=1)
        session.add(flow)
        await session.flush()
        await publish(session, flow)
    return flow.id


async def _executions_per_second(app, workspace_id: str, executions: int, concurrency: int) -> tuple[float, dict[str, int]]:
    async with app[DB].transaction(tenant=workspace_id) as session:
        await create_table(session, workspace_id=workspace_id, name="Customers", slug="customers", columns=[{"name": "email", "type": "text"}, {"name": "tier", "type": "text"}])
        for n in range(200):
            await upsert_row(session, workspace_id=workspace_id, table_slug="customers", external_key=f"c{n}", data={"email": f"user{n}@example.com", "tier": "gold"})
    flow_id = await _flow(app, workspace_id, three_steps(), "bench")
    rows = [{"workspace_id": workspace_id, "flow_id": flow_id, "version": 1, "trigger_source": "webhook",
             "trigger_payload": {"email": f"USER{n % 200}@example.com", "amount": 5 + n % 20}} for n in range(executions)]  # fmt: skip
    async with app[DB].transaction() as session:
        for start in range(0, executions, 500):
            await create_executions(app, session, rows[start : start + 500])

    async def finished() -> bool:
        async with app[DB].session() as session:
            pending = await session.scalar(select(func.count()).select_from(FlowExecution).where(FlowExecution.status.in_(("pending", "running"))))
        return pending == 0

    async with aiohttp.ClientSession() as http:
        posts_before = await _target_count(http)
        worker = Worker(app, app[JOBS], concurrency=concurrency, poll_seconds=0.01)
        began = time.perf_counter()
        task = asyncio.create_task(worker.run())
        await _until(finished)
        elapsed = time.perf_counter() - began
        worker.stop()
        await task
        posts = await _target_count(http) - posts_before
    async with app[DB].session() as session:
        statuses = dict((await session.execute(select(FlowExecution.status, func.count()).group_by(FlowExecution.status))).all())
    if statuses != {"completed": executions} or posts != executions:
        raise SystemExit(f"executions did not all complete exactly once: {statuses}, {posts} POSTs for {executions} executions")
    statuses["http POSTs received"] = posts
    return executions / elapsed, statuses


async def _latency(app, workspace_id: str, marks: Marks, events: int, concurrency: int) -> list[float]:
    await add_connection(app, workspace_id, "facebook", meta={"page_id": "bench-page"})
    steps = [{"id": "mark", "type": "bench.mark", "key": "{{ trigger.leadgen_id }}"}, *three_steps()]
    flow_id = await _flow(app, workspace_id, steps, "latency")
    async with app[DB].transaction(tenant=workspace_id) as session:
        session.add(FlowTriggerSubscription(flow_id=flow_id, provider_type="facebook", trigger_name="leadgen", kind="webhook", config={}, is_active=True))
    site_runner = web.AppRunner(app, access_log=None)
    await site_runner.setup()
    site = web.TCPSite(site_runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    worker = Worker(app, app[JOBS], concurrency=concurrency, poll_seconds=0.01)
    task = asyncio.create_task(worker.run())
    samples = []
    try:
        async with aiohttp.ClientSession() as http:
            for n in range(events):
                key = f"lead-{n}"
                body = json.dumps(leadgen_payload("bench-page", key)).encode()
                headers = {"x-hub-signature-256": meta_signature(APP_SECRET, body), "Content-Type": "application/json"}
                marks.arrived.clear()
                began = time.perf_counter()
                async with http.post(f"http://127.0.0.1:{port}/webhook/facebook", data=body, headers=headers) as response:
                    assert response.status == 200, await response.text()
                while key not in marks.seen:
                    await asyncio.wait_for(marks.arrived.wait(), 30)
                    marks.arrived.clear()
                samples.append(marks.seen[key] - began)
    finally:
        worker.stop()
        await task
        await site_runner.cleanup()
    return samples


async def run(name: str, url: str, args) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as data_dir:
        marks = Marks()
        app = create_app(_settings(url, data_dir, args.concurrency), plugins=[marks], background=False)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()  # migrations, outbound client, seeds
        try:
            baseline = await _queue_baseline(app, args.jobs, args.concurrency)
            ws = (await create_workspace_with_key(app, plan="enterprise"))["workspace_id"]
            rate, statuses = await _executions_per_second(app, ws, args.executions, args.concurrency)
            latency = await _latency(app, ws, marks, args.latency, args.concurrency) if args.latency else []
        finally:
            await runner.cleanup()
    return {"name": name, "baseline": baseline, "rate": rate, "statuses": statuses, "latency": latency}


async def _pg_scratch(base_url: str):
    name = f"pb_bench_flows_{uuid.uuid4().hex[:8]}"
    admin = base_url.replace("postgresql+asyncpg://", "postgresql://", 1)
    connection = await asyncpg.connect(admin)
    try:
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()
    return name, base_url.rpartition("/")[0] + "/" + name, admin


async def _pg_drop(admin: str, name: str) -> None:
    connection = await asyncpg.connect(admin)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await connection.close()


def _report(result: dict[str, object], args) -> None:
    baseline, rate, latency = result["baseline"], result["rate"], result["latency"]
    print(f"[{result['name']}]")
    print(f"  raw job queue (no-op jobs, same workers): {baseline:8.0f} jobs/s")
    print(f"  three-step flow executions:               {rate:8.0f} executions/s   {rate / baseline:5.2f}x the raw queue")
    print(f"  execution outcomes:                       {result['statuses']}")
    if latency:
        ordered = sorted(latency)
        p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
        print(f"  inbound webhook -> first step:            p50 {statistics.median(ordered) * 1000:6.1f} ms   p95 {p95 * 1000:6.1f} ms   ({len(ordered)} events)")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--executions", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64, help="jobs run at once by the one worker process")
    parser.add_argument("--latency", type=int, default=30, help="webhook events for the latency figure (0: skip)")
    args = parser.parse_args()
    global TARGET_PORT
    ready, port = multiprocessing.Event(), multiprocessing.Value("i", 0)
    target = multiprocessing.Process(target=_target, args=(ready, port), daemon=True)
    target.start()
    if not ready.wait(30):
        raise SystemExit("the http target did not start")
    TARGET_PORT = port.value
    print(f"one process, {args.concurrency} concurrent jobs; {args.executions} executions, {args.jobs} baseline jobs; "
          f"settings: PATCHBAY_WORKERS=0 (the benchmark runs its own worker), PATCHBAY_SCHEDULER=false, PATCHBAY_ALLOW_INSECURE_TARGETS=true (loopback target)")  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        _report(await run("sqlite", f"sqlite+aiosqlite:///{folder}/bench.db", args), args)
    pg = os.environ.get("PATCHBAY_BENCH_PG_URL") or os.environ.get("PATCHBAY_TEST_DATABASE_URL")
    if pg:
        name, url, admin = await _pg_scratch(pg)
        try:
            _report(await run("postgresql", url, args), args)
        finally:
            await _pg_drop(admin, name)
    else:
        print("[postgresql] skipped: set PATCHBAY_TEST_DATABASE_URL or PATCHBAY_BENCH_PG_URL")


if __name__ == "__main__":
    asyncio.run(main())
