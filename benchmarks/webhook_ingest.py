"""Inbound webhook pipeline in steady state: signed Meta leadgen events accepted (verified,
committed, 200), routed, their leads fetched and stored, and forwarded to a local subscriber by one
``patchbay serve`` process with the default background workers, on SQLite and on PostgreSQL,
against a bare aiohttp handler that only answers 200, measured in the same run by the same load
generator.

    python benchmarks/webhook_ingest.py [--seconds 20] [--concurrency 64] [--events leadgen|feed] [--py-spy DIR] [--processes 1,2]

Prints forwarded events per second (accepted and forwarded, counted up to the last forward) and its
ratios to the bare handler and to a relay (each POST forwarded at once to a receiver through one
client session, nothing stored: the floor of one POST in and one out per event in one aiohttp
process), the server's CPU time per accepted event over the load and the drain next to the bare
handler's per request and the relay's per event (steadier than rates on a shared machine), p50/p99 receipt-to-forward, the leads stored,
how many accepted events were never forwarded or forwarded twice (by delivery id), the backlog
(accepted, not yet forwarded) each second, and jobs done per second by kind. PostgreSQL runs when
PATCHBAY_TEST_DATABASE_URL (or PATCHBAY_BENCH_PG_URL) names a server: a scratch database is created
and dropped. The server runs in its own process; the load generator, the fake Graph API serving the
leads and the receiver in this one. ``--events feed`` sends page changes that fetch and store
nothing. ``--py-spy DIR`` samples the server's thread holding the GIL through the load and the drain
(``DIR/<database>.txt``, collapsed stacks) and prints where its samples go
(``benchmarks/profiles.py``); py-spy pauses the server to sample, so that run's rates drop.
``--processes 1,2`` measures ``patchbay serve --processes 1`` then ``--processes 2`` on each database
(a fresh database each; rows ``sqlite-x2`` and so on) and prints the ratio of their forwarded rates;
the CPU is summed over the server's processes. Without it, one process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp
from _common import add_processes_option, event_loop_line, free_port, pg_drop, pg_scratch, tree_cpu_seconds
from profiles import print_shares, start_py_spy, stop_py_spy

from patchbay.core.app import create_app
from patchbay.core.appkeys import SERVICES
from patchbay.core.settings import load_settings
from patchbay.core.storage.db import Database
from patchbay.core.storage.migrate import upgrade
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.webhooks.models import WebhookSubscription
from patchbay.providers.meta.testing import FakeGraph, leadgen_payload, meta_signature, page_event_payload
from patchbay.testing import Receiver, add_connection

APP_SECRET = "bench-app-secret"
PATCHBAY = str(Path(sys.executable).parent / "patchbay")
BARE = """
import sys
from aiohttp import web
async def ok(request):
    await request.read()
    return web.Response(text="ok")
app = web.Application()
app.router.add_post("/{tail:.*}", ok)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
"""
#: The floor of the pipeline's shape without storage: each POST forwarded at once, through one
#: keep-alive client session, to the receiver, and answered 200 when the receiver has answered.
RELAY = """
import sys
import aiohttp
from aiohttp import web
async def relay(request):
    body = await request.read()
    async with request.app["client"].post(sys.argv[2], data=body, headers={"Content-Type": "application/json"}) as answer:
        await answer.read()
    return web.Response(text="ok")
async def client(app):
    app["client"] = aiohttp.ClientSession()
    yield
    await app["client"].close()
app = web.Application()
app.cleanup_ctx.append(client)
app.router.add_post("/{tail:.*}", relay)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
"""


async def wait_ready(url: str, process: asyncio.subprocess.Process) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(6000):  # up to 5 minutes: a loaded machine starts slowly
            try:
                async with session.get(url) as response:
                    if response.status < 500:
                        return
            except aiohttp.ClientError:
                pass
            if process.returncode is not None:
                raise RuntimeError("server exited at start")
            await asyncio.sleep(0.05)
    raise RuntimeError("server did not start")


async def stop(process: asyncio.subprocess.Process) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), 20)
    except TimeoutError:
        process.kill()


def signed_requests(n: int, page: str = "page-A") -> list[tuple[bytes, dict[str, str]]]:
    out = []
    for i in range(n):
        body = json.dumps(page_event_payload(page, value={"n": i, "nonce": uuid.uuid4().hex})).encode()
        out.append((body, {"x-hub-signature-256": meta_signature(APP_SECRET, body), "Content-Type": "application/json"}))
    return out


async def blast(url: str, requests: list[tuple[bytes, dict[str, str]]], concurrency: int) -> tuple[float, int]:
    """Send every request with ``concurrency`` in flight; answer (events per second, non-200s)."""
    queue = iter(requests)
    failures = 0

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal failures
        for body, headers in queue:
            async with session.post(url, data=body, headers=headers) as response:
                await response.read()
                failures += response.status != 200

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return len(requests) / elapsed, failures


async def measure_relay(events: int, concurrency: int) -> dict[str, float]:
    """The relay (``RELAY``) in its own process, forwarding to a fresh receiver: events forwarded
    per second and its CPU time per event."""
    receiver = await Receiver().start()
    port = free_port()
    relay = await asyncio.create_subprocess_exec(sys.executable, "-c", RELAY, str(port), receiver.url + "/relayed")
    try:
        await wait_ready(f"http://127.0.0.1:{port}/", relay)
        cpu_before = cpu_seconds(relay.pid)
        rate, failures = await blast(f"http://127.0.0.1:{port}/", signed_requests(events), concurrency)
        cpu = (cpu_seconds(relay.pid) - cpu_before) / events
    finally:
        await stop(relay)
        await receiver.close()
    if failures or len(receiver.requests) < events:
        raise RuntimeError(f"the relay lost events: {failures} not answered 200, {len(receiver.requests)} of {events} forwarded")
    return {"rate": rate, "cpu": cpu}


async def prepare(database_url: str, environ: dict[str, str], receiver_url: str) -> None:
    """The schema, a workspace with a page connection (its token fetches the leads) and a subscription."""
    db = Database(database_url)
    await upgrade(db)
    await db.close()
    app = create_app(load_settings({}, environ), background=False)
    ws = await create_workspace_with_key(app)
    await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"}, credentials={"access_token": "bench-page-token"})
    async with app[SERVICES].db.transaction(tenant=ws["workspace_id"]) as session:
        session.add(WebhookSubscription(provider="facebook", url=receiver_url, events=["*"], secret=app[SERVICES].secrets.encrypt("bench-callback-secret")))
    await app[SERVICES].db.close()


async def start_patchbay(environ: dict[str, str]) -> tuple[asyncio.subprocess.Process, str]:
    """``patchbay serve`` with the default background workers; its log (the JSON access log
    included, as by default) goes to ``serve.log`` in its data folder."""
    port = free_port()
    env = {**os.environ, **environ, "PATCHBAY_PORT": str(port)}
    Path(environ["PATCHBAY_DATA_DIR"]).mkdir(parents=True, exist_ok=True)
    log = (Path(environ["PATCHBAY_DATA_DIR"]) / "serve.log").open("wb")
    process = await asyncio.create_subprocess_exec(PATCHBAY, "serve", env=env, stdout=asyncio.subprocess.DEVNULL, stderr=log)
    log.close()
    await wait_ready(f"http://127.0.0.1:{port}/health", process)
    return process, f"http://127.0.0.1:{port}/webhook/facebook"


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system) the process ``pid`` and its children (``serve --processes N``)
    have used so far (Linux ``/proc``)."""
    return tree_cpu_seconds(pid)


def event_body(n: int, graph: FakeGraph | None) -> bytes:
    """Event ``n``: a ``leadgen`` change whose lead the fake Graph API serves, or (no ``graph``) a
    ``feed`` change, which fetches and stores nothing."""
    if graph is None:
        return json.dumps(page_event_payload("page-A", value={"n": n, "nonce": uuid.uuid4().hex})).encode()
    lead_id = f"lead-{n}-{uuid.uuid4().hex[:8]}"
    graph.add_lead(lead_id, email=f"{lead_id}@example.com", phone=f"+1555{n:07d}")  # a new person each: no merging
    return json.dumps(leadgen_payload("page-A", lead_id)).encode()


async def steady_load(url: str, receiver: Receiver, graph: FakeGraph | None, concurrency: int, seconds: float) -> dict[str, object]:
    """Post signed events with ``concurrency`` in flight for ``seconds`` while the workers route,
    fetch and store the leads and forward the events; sample the backlog (accepted, not yet
    forwarded) every second; then wait for the receiver to drain. Answers the counts, backlog
    samples and receipt-to-forward latencies."""
    sent: dict[str, float] = {}
    failures = 0
    stop_at = time.perf_counter() + seconds
    backlog: list[int] = []
    counter = iter(range(10**9))

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal failures
        while time.perf_counter() < stop_at:
            n = next(counter)
            body = event_body(n, graph)
            headers = {"x-hub-signature-256": meta_signature(APP_SECRET, body), "Content-Type": "application/json"}
            started = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as response:
                answer = await response.read()
            if response.status == 200:
                sent[json.loads(answer)["id"]] = started
            else:
                failures += 1

    async def sampler() -> None:
        while time.perf_counter() < stop_at:
            await asyncio.sleep(1)
            backlog.append(len(sent) - len(receiver.requests))

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        await asyncio.gather(sampler(), *(worker(session) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    drain_started = time.perf_counter()
    with contextlib.suppress(TimeoutError):
        await receiver.wait_for(len(sent), timeout=120)
    drain = time.perf_counter() - drain_started
    loop_offset = time.perf_counter() - asyncio.get_running_loop().time()
    seen: dict[str, int] = {}
    forwarded = []
    for request in receiver.requests:
        delivery = request["headers"]["X-Connect-Delivery"]
        seen[delivery] = seen.get(delivery, 0) + 1
        if delivery in sent and seen[delivery] == 1:
            forwarded.append((request["at"] + loop_offset - sent[delivery]) * 1000)
    return {
        "accepted": len(sent),
        "failures": failures,
        "elapsed": elapsed,
        "drain": drain,
        "backlog": backlog,
        "latencies": forwarded,
        "missing": len(set(sent) - set(seen)),
        "twice": sum(1 for count in seen.values() if count > 1),
    }


async def stored(database_url: str, seconds: float) -> tuple[dict[str, float], int, list]:
    """Jobs done per second by kind over the run (one worker pool in the process), the leads stored
    and the commonest reasons of failed events."""
    db = Database(database_url)
    try:
        async with db.engine.begin() as connection:
            rows = (await connection.exec_driver_sql("SELECT kind, count(*) FROM jobs WHERE status = 'done' GROUP BY kind")).all()
            leads = (await connection.exec_driver_sql("SELECT count(*) FROM leads")).scalar()
            reasons = (
                await connection.exec_driver_sql("SELECT reason, count(*) FROM webhook_events WHERE status = 'FAILED' GROUP BY reason ORDER BY 2 DESC LIMIT 3")
            ).all()
    finally:
        await db.close()
    return {kind: count / seconds for kind, count in rows}, leads, reasons


async def measure_database(label: str, database_url: str, tmp: Path, args, bare: tuple[str, int], processes: int = 1) -> dict[str, object]:
    receiver = await Receiver().start()
    graph = await FakeGraph().start() if args.events == "leadgen" else None
    config = tmp / f"{label}.toml"
    graph_url = f'api_base_url = "{graph.url}"\n' if graph else ""
    config.write_text(f'[providers.facebook]\nwebhook_secret = "{APP_SECRET}"\n{graph_url}')
    environ = {
        "PATCHBAY_SECRET_KEY": "bench-secret",
        "PATCHBAY_DATA_DIR": str(tmp / label),
        "PATCHBAY_DATABASE_URL": database_url,
        "PATCHBAY_SCHEDULER": "false",
        "PATCHBAY_ALLOW_INSECURE_TARGETS": "true",
        "PATCHBAY_CONFIG": str(config),
        "PATCHBAY_PROCESSES": str(processes),
    }
    await prepare(database_url, environ, receiver.url)
    try:
        process, url = await start_patchbay(environ)
        profiler = start_py_spy(process.pid, Path(args.py_spy) / f"{label}.txt", gil=True) if args.py_spy else None
        try:
            cpu_before = cpu_seconds(process.pid)
            result = await steady_load(url, receiver, graph, args.concurrency, args.seconds)
            result["cpu"] = cpu_seconds(process.pid) - cpu_before
            if profiler is not None:
                stop_py_spy(profiler)
            result["jobs"], result["leads"], result["failed"] = await stored(database_url, result["elapsed"] + result["drain"])
        finally:
            await stop(process)
        bare_url, bare_pid = bare
        bare_cpu = cpu_seconds(bare_pid)
        bare_rate, _ = await blast(bare_url, signed_requests(args.bare_events), args.concurrency)
        result["bare_cpu"] = (cpu_seconds(bare_pid) - bare_cpu) / args.bare_events
    finally:
        await receiver.close()
        if graph is not None:
            await graph.close()
    result["bare_rate"] = bare_rate
    return result


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20, help="duration of the steady-state load")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--events", choices=("leadgen", "feed"), default="leadgen", help="leadgen: each event's lead fetched from a local fake Graph API and stored"
    )
    parser.add_argument("--py-spy", metavar="DIR", help="sample the server with py-spy during the load; collapsed stacks written to DIR/<database>.txt")
    parser.add_argument("--bare-events", type=int, default=10000, help="requests sent to the bare handler")
    add_processes_option(parser)
    args = parser.parse_args()
    bare_port = free_port()
    bare = await asyncio.create_subprocess_exec(sys.executable, "-c", BARE, str(bare_port))
    await wait_ready(f"http://127.0.0.1:{bare_port}/", bare)
    bare_target = (f"http://127.0.0.1:{bare_port}/", bare.pid)
    pg_url = os.environ.get("PATCHBAY_BENCH_PG_URL") or os.environ.get("PATCHBAY_TEST_DATABASE_URL")
    results = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp_path = Path(tmp)
            for count in args.processes:
                label = "sqlite" if count == args.processes[0] else f"sqlite-x{count}"
                results[label] = await measure_database(label, f"sqlite+aiosqlite:///{tmp_path / label}.db", tmp_path, args, bare_target, count)
            if pg_url:
                for count in args.processes:
                    label = "postgresql" if count == args.processes[0] else f"postgresql-x{count}"
                    name, url, admin = await pg_scratch(pg_url, "pbbench_ingest")
                    try:
                        results[label] = await measure_database(label, url, tmp_path, args, bare_target, count)
                    finally:
                        await pg_drop(admin, name)
            else:
                print("PostgreSQL skipped: set PATCHBAY_TEST_DATABASE_URL or PATCHBAY_BENCH_PG_URL")
        relay = await measure_relay(args.bare_events, args.concurrency)
    finally:
        await stop(bare)
    fetched = "each lead fetched from a local fake Graph API and stored" if args.events == "leadgen" else "nothing fetched or stored"
    print(
        f"steady state: signed Meta {args.events} events from an aiohttp client at concurrency {args.concurrency} for {args.seconds:g} s, {fetched}, one subscription per event;"
    )
    print(
        "settings differing from the default: PATCHBAY_SCHEDULER=false, PATCHBAY_ALLOW_INSECURE_TARGETS=true (local receiver); the access log goes to serve.log in the data folder; "
        f"PATCHBAY_PROCESSES={args.processes[0]}" + "".join(f" (rows -x{n}: {n})" for n in args.processes[1:])
    )
    print(f"patchbay {event_loop_line()}")
    print(
        f"relay (each POST forwarded at once through one client session, nothing stored; its own process): {relay['rate']:.0f} events/s, "
        f"{1000 * relay['cpu']:.3f} ms CPU per event: the floor of one POST in and one POST out per event in one aiohttp process"
    )
    print(
        f"{'database':<11} {'fwd/s':>7} {'accepted/s':>10} {'bare 200/s':>10} {'ratio':>6} {'of relay':>8} {'p50 ms':>8} {'p99 ms':>8} {'drain s':>7} {'cpu ms/ev':>9} {'bare cpu':>8} {'leads':>6} {'missing':>7} {'twice':>5}  backlog each second"
    )
    for label, r in results.items():
        forwarded_rate = (r["accepted"] - r["missing"]) / (r["elapsed"] + r["drain"])
        accepted_rate = r["accepted"] / r["elapsed"]
        print(
            f"{label:<11} {forwarded_rate:>7.0f} {accepted_rate:>10.0f} {r['bare_rate']:>10.0f} {forwarded_rate / r['bare_rate']:>6.3f} {forwarded_rate / relay['rate']:>8.3f} "
            f"{percentile(r['latencies'], 0.5):>8.0f} {percentile(r['latencies'], 0.99):>8.0f} {r['drain']:>7.1f} {1000 * r['cpu'] / max(1, r['accepted']):>9.2f} {1000 * r['bare_cpu']:>8.3f} {r['leads']:>6} {r['missing']:>7} {r['twice']:>5}  {r['backlog']}"
        )
        print(
            "  jobs done/s over the run (one worker pool, PATCHBAY_WORKERS default): "
            + ", ".join(f"{kind} {rate:.0f}" for kind, rate in sorted(r["jobs"].items()))
        )
        if r["failures"]:
            print(f"  {label}: {r['failures']} requests were not answered 200")
        if r["missing"] or r["twice"]:
            print(f"  {label}: NOT EXACTLY ONCE: {r['missing']} accepted events never forwarded, {r['twice']} forwarded more than once")
        if args.events == "leadgen" and r["leads"] != r["accepted"]:
            print(f"  {label}: NOT EXACTLY ONCE: {r['leads']} leads stored for {r['accepted']} accepted leadgen events")
        for reason, count in r["failed"]:
            print(f"  {label}: {count} events FAILED: {reason}")
        if args.py_spy:
            print_shares(Path(args.py_spy) / f"{label}.txt")

    def forwarded(r) -> float:
        return (r["accepted"] - r["missing"]) / (r["elapsed"] + r["drain"])

    for label in [label for label in results if "-x" in label]:
        first = label.split("-x")[0]
        print(f"{label} / {first}: forwarded events/s {forwarded(results[label]) / forwarded(results[first]):.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
