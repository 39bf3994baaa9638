"""The console's server time for the Logs page with 100,000 rows in the workspace.

    python benchmarks/console.py [--rows 100000] [--samples 60] [--databases sqlite,postgresql]

A workspace is filled, with batched inserts (``--batch`` rows per INSERT, not one transaction a
row), with ``--rows`` rows of the timeline's kinds spread over 30 days: proxy calls (a few token
refreshes and MCP tool calls among them), inbound events, deliveries with one attempt each, and
flow executions (a quarter failed); a second workspace gets a tenth as many, so the queries have
another tenant's rows to skip. Then each page is asked ``--samples`` times (after 5 warm-ups) by a
signed-in person, and a middleware added for the run times the server's handling of each request
(from the first middleware to the answer, the page's rendering included); p50 and p95 are printed.

Pages: the Logs page first page; a page deep in the keyset (the cursor of the entry half way
down the timeline); the first page and a deep page filtered by ``status=failed``; the execution
rows through the Logs page filtered by ``kind=execution``; and a flow's executions page (the
Flows area's list: first page, and a deep page of its failed executions).

PostgreSQL runs when PATCHBAY_TEST_DATABASE_URL (or PATCHBAY_BENCH_PG_URL) names a server: a scratch
database is created and dropped. Goal: p95 under 150 ms on both databases.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
import uuid
from datetime import timedelta
from urllib.parse import quote

import aiohttp
import asyncpg
from _common import pg_drop, pg_scratch
from aiohttp import web
from sqlalchemy import func, insert, select

from patchbay.core.app import create_app
from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.models import Connection, ProxyCallLog
from patchbay.core.console import service as console
from patchbay.core.flows.models import Flow, FlowExecution
from patchbay.core.settings import load_settings
from patchbay.core.timeline import Key
from patchbay.core.timeutil import utcnow
from patchbay.core.users.service import create_user
from patchbay.core.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEvent, WebhookSubscription
from patchbay.core.workspaces.service import add_member, create_workspace

_ENVIRON = {"PATCHBAY_SECRET_KEY": "bench-secret-key-0123456789", "PATCHBAY_LOG_LEVEL": "WARNING", "PATCHBAY_SCHEDULER": "false"}
#: shares of the rows by kind: proxy audit, inbound events, deliveries (+ one attempt each), executions
SHARES = {"proxy": 0.4, "inbound": 0.15, "delivery": 0.15, "execution": 0.3}


def _ids(n: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(n)]


async def _insert(session, table, rows: list[dict], batch: int) -> None:
    for start in range(0, len(rows), batch):
        await session.execute(insert(table), rows[start : start + batch])


async def fill(services, workspace_id: str, rows: int, batch: int) -> dict[str, int]:
    """``rows`` timeline rows in ``workspace_id``, inserted ``batch`` at a time (one transaction per kind)."""
    rng = random.Random(7)
    now = utcnow()

    def moment():
        return now - timedelta(seconds=rng.uniform(0, 30 * 86400))

    counts = {kind: int(rows * share) for kind, share in SHARES.items()}
    connections = _ids(20)
    async with services.db.transaction() as session:
        await _insert(
            session,
            Connection.__table__,
            [
                {
                    "id": c,
                    "workspace_id": workspace_id,
                    "provider": "facebook",
                    "status": "connected",
                    "credentials": services.secrets.encrypt("{}"),
                    "params": {},
                    "metadata": {"page_id": f"p{i}"},
                    "scopes": [],
                    "refresh_failures": 0,
                    "created_at": moment(),
                    "updated_at": now,
                }
                for i, c in enumerate(connections)
            ],
            batch,
        )
        subscription = str(uuid.uuid4())
        await _insert(
            session,
            WebhookSubscription.__table__,
            [
                {
                    "id": subscription,
                    "workspace_id": workspace_id,
                    "provider": "facebook",
                    "url": "https://example.com/hook",
                    "events": ["*"],
                    "is_active": True,
                    "long_tail": False,
                    "created_at": now,
                    "updated_at": now,
                }
            ],
            batch,
        )
        flows = _ids(5)
        await _insert(
            session,
            Flow.__table__,
            [
                {
                    "id": f,
                    "workspace_id": workspace_id,
                    "name": f"Flow {i}",
                    "status": "published",
                    "steps": [],
                    "version": 1,
                    "is_active": True,
                    "created_at": now,
                    "updated_at": now,
                }
                for i, f in enumerate(flows)
            ],
            batch,
        )
    async with services.db.transaction() as session:
        sources = ["proxy"] * 90 + ["client"] * 6 + ["refresh"] * 2 + ["mcp"] * 2
        await _insert(
            session,
            ProxyCallLog.__table__,
            [
                {
                    "id": i,
                    "workspace_id": workspace_id,
                    "connection_id": rng.choice(connections),
                    "provider": "facebook",
                    "source": rng.choice(sources),
                    "method": "GET",
                    "path": "/v19.0/me/leads",
                    "status": rng.choice([200] * 9 + [502]),
                    "duration_ms": rng.uniform(5, 300),
                    "error": None,
                    "created_at": moment(),
                }
                for i in _ids(counts["proxy"])
            ],
            batch,
        )
    events = _ids(counts["inbound"])
    async with services.db.transaction() as session:
        await _insert(
            session,
            WebhookEvent.__table__,
            [
                {
                    "id": e,
                    "workspace_id": workspace_id,
                    "provider": "facebook",
                    "status": rng.choice(["PROCESSED"] * 9 + ["FAILED"]),
                    "event_type": "feed",
                    "body": '{"object":"page"}',
                    "payload": {"n": n},
                    "connection_id": rng.choice(connections),
                    "created_at": moment(),
                    "updated_at": now,
                }
                for n, e in enumerate(events)
            ],
            batch,
        )
    deliveries = _ids(counts["delivery"])
    async with services.db.transaction() as session:
        delivery_rows = [
            {
                "id": d,
                "workspace_id": workspace_id,
                "event_id": rng.choice(events) if events else d,
                "subscription_id": subscription,
                "status": rng.choice(["succeeded"] * 8 + ["failed", "pending"]),
                "attempts": 1,
                "last_status_code": 200,
                "manual": False,
                "body": b"{}",
                "created_at": moment(),
                "updated_at": now,
            }
            for d in deliveries
        ]
        await _insert(session, WebhookDelivery.__table__, delivery_rows, batch)
        await _insert(
            session,
            WebhookAttempt.__table__,
            [
                {
                    "id": str(uuid.uuid4()),
                    "workspace_id": workspace_id,
                    "delivery_id": d["id"],
                    "number": 1,
                    "status_code": 200,
                    "duration_ms": 12,
                    "created_at": d["created_at"],
                    "updated_at": now,
                }
                for d in delivery_rows
            ],
            batch,
        )
    async with services.db.transaction() as session:
        await _insert(
            session,
            FlowExecution.__table__,
            [
                {
                    "id": x,
                    "workspace_id": workspace_id,
                    "flow_id": rng.choice(flows),
                    "version": 1,
                    "status": rng.choice(["completed"] * 3 + ["failed"]),
                    "trigger_source": "webhook",
                    "trigger_payload": {"n": 1},
                    "attempts": 1,
                    "duration_ms": 40,
                    "created_at": moment(),
                    "updated_at": now,
                }
                for x in _ids(counts["execution"])
            ],
            batch,
        )
    return counts


async def deep_key(services, workspace_id: str, *, executions_failed: bool = False) -> str:
    """The key of an entry half way down the timeline (or of the failed executions)."""
    async with services.db.session() as session:
        if executions_failed:
            table, status = FlowExecution, (FlowExecution.status == "failed")
        else:
            table, status = ProxyCallLog, True
        total = len((await session.execute(select(table.id).where(table.workspace_id == workspace_id, status))).all())
        row = (
            await session.execute(
                select(table.created_at, table.id)
                .where(table.workspace_id == workspace_id, status)
                .order_by(table.created_at.desc(), table.id.desc())
                .offset(total // 2)
                .limit(1)
            )
        ).one()
    return Key(row[0], row[1]).encode()


async def flow_deep_cursor(services, workspace_id: str) -> tuple[str, str]:
    """A flow of the workspace, and the executions page's ``before`` cursor half way down its
    failed executions."""
    async with services.db.session() as session:
        flow_id = await session.scalar(select(FlowExecution.flow_id).where(FlowExecution.workspace_id == workspace_id).limit(1))
        failed = (FlowExecution.flow_id == flow_id) & (FlowExecution.status == "failed")
        total = await session.scalar(select(func.count()).select_from(FlowExecution).where(failed))
        row = (
            await session.execute(
                select(FlowExecution.created_at, FlowExecution.id)
                .where(failed)
                .order_by(FlowExecution.created_at.desc(), FlowExecution.id.desc())
                .offset(total // 2)
                .limit(1)
            )
        ).one()
    return flow_id, f"{row[0].isoformat()}~{row[1]}"


async def signed_in_cookie(services, workspace_id: str) -> str:
    """A console session of an admin of the workspace (the sign-in itself is not what is timed)."""
    async with services.db.transaction() as session:
        user = await create_user(session, email=f"bench-{uuid.uuid4().hex[:6]}@example.com", password="correct horse battery", name="Bench")
        await add_member(session, workspace_id=workspace_id, user_id=user.id, role="admin")
    return await console.start_session(services, user.id, "", None)  # no identity-provider grant: the session lives its own time


def timing_middleware(times: list[tuple[float, float]]):
    """Each request's wall-clock time and the process's CPU time (every thread: aiosqlite's too)
    while it was handled; requests are sent one at a time, so the CPU time is the request's own."""

    @web.middleware
    async def timed(request, handler):
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return await handler(request)
        finally:
            times.append((time.perf_counter() - started, time.process_time() - cpu))

    return timed


async def run(name: str, url: str, args) -> list[tuple[str, float, float, int]]:
    with tempfile.TemporaryDirectory() as data_dir:
        settings = load_settings({}, {"PATCHBAY_DATABASE_URL": url, "PATCHBAY_DATA_DIR": data_dir, **_ENVIRON})
        times: list[tuple[float, float]] = []
        app = create_app(settings, background=False)
        app.middlewares.insert(0, timing_middleware(times))
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        services = app[SERVICES]
        try:
            async with services.db.transaction() as session:
                workspace, _ = await create_workspace(session, name="Bench", plan="enterprise")
                other, _ = await create_workspace(session, name="Noise", plan="enterprise")
            started = time.perf_counter()
            counts = await fill(services, workspace.id, args.rows, args.batch)
            await fill(services, other.id, args.rows // 10, args.batch)
            filled = time.perf_counter() - started
            print(f"[{name}] filled {sum(counts.values())} rows {counts} (+{args.rows // 10} in another workspace) in {filled:.1f} s")
            if url.startswith("postgresql"):
                connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
                try:
                    await connection.execute("ANALYZE")
                finally:
                    await connection.close()
            cookie = await signed_in_cookie(services, workspace.id)
            logs = f"/console/w/{workspace.id}/logs"
            deep = await deep_key(services, workspace.id)
            deep_failed_executions = await deep_key(services, workspace.id, executions_failed=True)
            flow_id, flow_cursor = await flow_deep_cursor(services, workspace.id)
            flow_executions = f"/console/w/{workspace.id}/flows/{flow_id}/executions"
            pages = [
                ("home (the console's fixed cost, for comparison)", f"/console/w/{workspace.id}/"),
                ("logs, first page", logs),
                ("logs, deep page (keyset half way down)", f"{logs}?cursor={deep}"),
                ("logs, status=failed, first page", f"{logs}?status=failed"),
                ("logs, status=failed, deep page", f"{logs}?status=failed&cursor={deep}"),
                ("executions (logs kind=execution), first page", f"{logs}?kind=execution"),
                ("executions (logs kind=execution&status=failed), deep page", f"{logs}?kind=execution&status=failed&cursor={deep_failed_executions}"),
                ("a flow's executions page, first page", flow_executions),
                ("a flow's executions page, status=failed, deep page", f"{flow_executions}?status=failed&before={quote(flow_cursor)}"),
            ]
            results = []
            async with aiohttp.ClientSession(f"http://127.0.0.1:{port}", headers={"Cookie": f"pb_console={cookie}"}) as http:
                for label, path in pages:
                    for _ in range(5):
                        async with http.get(path, allow_redirects=False) as response:
                            assert response.status == 200, (path, response.status, (await response.text())[:500])
                            await response.read()
                    times.clear()
                    for _ in range(args.samples):
                        async with http.get(path, allow_redirects=False) as response:
                            page = await response.text()
                    assert page.count("<tr>") >= 2, (path, "the page lists entries")
                    wall, cpu = sorted(t[0] for t in times), sorted(t[1] for t in times)
                    results.append((label, _ms(wall, 0.5), _ms(wall, 0.95), _ms(cpu, 0.5), _ms(cpu, 0.95)))
        finally:
            await runner.cleanup()
    return results


def _ms(ordered: list[float], share: float) -> float:
    return (statistics.median(ordered) if share == 0.5 else ordered[max(0, int(len(ordered) * share) - 1)]) * 1000


def report(name: str, results, goal: float) -> None:
    print(
        f"[{name}] server time per page, wall clock and the process's CPU (p95 goal < {goal:.0f} ms; load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs);"
    )
    for label, p50, p95, cpu50, cpu95 in results:
        print(f"  {label:60s} wall p50 {p50:6.1f} ms  p95 {p95:6.1f} ms {'ok  ' if p95 < goal else 'OVER'}   CPU p50 {cpu50:6.1f} ms  p95 {cpu95:6.1f} ms")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=2_000, help="rows per INSERT")
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--databases", default="sqlite,postgresql")
    args = parser.parse_args()
    goal = 150.0
    databases = args.databases.split(",")
    if "sqlite" in databases:
        with tempfile.TemporaryDirectory() as folder:
            report("sqlite", await run("sqlite", f"sqlite+aiosqlite:///{folder}/bench.db", args), goal)
    if "postgresql" not in databases:
        return
    pg = os.environ.get("PATCHBAY_BENCH_PG_URL") or os.environ.get("PATCHBAY_TEST_DATABASE_URL")
    if pg:
        name, url, admin = await pg_scratch(pg, "pb_bench_console")
        try:
            report("postgresql", await run("postgresql", url, args), goal)
        finally:
            await pg_drop(admin, name)
    else:
        print("[postgresql] skipped: set PATCHBAY_TEST_DATABASE_URL or PATCHBAY_BENCH_PG_URL")


if __name__ == "__main__":
    asyncio.run(main())
