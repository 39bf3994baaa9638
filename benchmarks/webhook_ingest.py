"""Inbound webhook ingestion: signed events accepted per second (verified, committed, 200) by one
``patchbay serve`` process on SQLite and on PostgreSQL, and the latency from receipt to the
forwarded delivery at a local receiver, each against a bare aiohttp handler that only answers 200,
measured in the same run by the same load generator.

    python benchmarks/webhook_ingest.py [--seconds 8] [--concurrency 128] [--no-wrk]

The throughput load comes from wrk (a C load generator, with a Lua script cycling through
pre-signed requests) when it is installed, else from an aiohttp client (``--events``). PostgreSQL runs when PATCHBAY_TEST_DATABASE_URL (or PATCHBAY_BENCH_PG_URL) names a server: a
scratch database is created and dropped. The server runs in its own process; the load generator
and the receiver in this one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp
import asyncpg
from aiohttp import web

from patchbay.core.app import create_app
from patchbay.core.appkeys import DB, SECRETS
from patchbay.core.settings import load_settings
from patchbay.core.storage.db import Database
from patchbay.core.storage.migrate import upgrade
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.webhooks.models import WebhookSubscription
from patchbay.core.webhooks.testing import Receiver, add_connection, meta_signature, page_event_payload

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_ready(url: str, process: asyncio.subprocess.Process) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(600):
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


WRK_SCRIPT = """
local requests = {}
local i = 0
function init(args)
  for line in io.lines(os.getenv("PB_REQUESTS")) do
    local tab = line:find("\\t")
    local headers = {}
    for name, value in pairs(wrk.headers) do headers[name] = value end
    headers["x-hub-signature-256"] = line:sub(1, tab - 1)
    headers["Content-Type"] = "application/json"
    requests[#requests + 1] = wrk.format("POST", nil, headers, line:sub(tab + 1))
  end
end
request = function()
  i = i % #requests + 1
  return requests[i]
end
"""


async def wrk_blast(url: str, requests: list[tuple[bytes, dict[str, str]]], concurrency: int, seconds: int, tmp: Path) -> tuple[float, int, int]:
    """The same with wrk (a C load generator, so the generator is not the bottleneck): answers
    (requests per second, non-2xx answers, requests sent)."""
    lines = tmp / "requests.tsv"
    lines.write_text("".join(f"{headers['x-hub-signature-256']}\t{body.decode()}\n" for body, headers in requests))
    script = tmp / "post.lua"
    script.write_text(WRK_SCRIPT)
    process = await asyncio.create_subprocess_exec(
        "wrk", "-t2", f"-c{concurrency}", f"-d{seconds}s", "-s", str(script), url,
        env={**os.environ, "PB_REQUESTS": str(lines)}, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    output = (await process.communicate())[0].decode()
    rate = float(next(line.split()[1] for line in output.splitlines() if line.startswith("Requests/sec:")))
    sent = int(next(line.split()[0] for line in output.splitlines() if "requests in" in line))
    errors = next((int(line.split()[-1]) for line in output.splitlines() if "Non-2xx" in line), 0)
    return rate, errors, sent


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


async def latencies(url: str, requests: list[tuple[bytes, dict[str, str]]], receiver: Receiver | None, gap: float) -> list[float]:
    """Send one request at a time (``gap`` apart): milliseconds from sending to the receiver's
    arrival of the forwarded event (or to the answer, without a receiver)."""
    sent: dict[str, float] = {}
    results = []
    async with aiohttp.ClientSession() as session:
        for body, headers in requests:
            started = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as response:
                answer = await response.read()
            if receiver is None:
                results.append((time.perf_counter() - started) * 1000)
            else:
                sent[json.loads(answer)["id"]] = started
            await asyncio.sleep(gap)
    if receiver is not None:
        await receiver.wait_for(len(requests), timeout=60)
        loop_offset = time.perf_counter() - asyncio.get_running_loop().time()
        for request in receiver.requests:
            delivery = request["headers"]["X-Connect-Delivery"]
            if delivery in sent:
                results.append((request["at"] + loop_offset - sent[delivery]) * 1000)
    return results


async def prepare(database_url: str, environ: dict[str, str], receiver_url: str) -> None:
    db = Database(database_url)
    await upgrade(db)
    await db.close()
    app = create_app(load_settings({}, environ), background=False)
    ws = await create_workspace_with_key(app)
    await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    async with app[DB].transaction(tenant=ws["workspace_id"]) as session:
        session.add(WebhookSubscription(provider="facebook", url=receiver_url, events=["*"], secret=app[SECRETS].encrypt("bench-callback-secret")))
    await app[DB].close()


async def drop_backlog(database_url: str) -> int:
    """Count the stored events of the throughput run, then drop them and their processing jobs so
    the latency run starts on an idle queue; answers the count."""
    db = Database(database_url)
    try:
        async with db.engine.begin() as connection:
            stored = (await connection.exec_driver_sql("SELECT count(*) FROM webhook_events")).scalar_one()
            await connection.exec_driver_sql("DELETE FROM jobs WHERE kind = 'webhooks.process'")
            await connection.exec_driver_sql("DELETE FROM webhook_events")
    finally:
        await db.close()
    return stored


async def start_patchbay(environ: dict[str, str], workers: int) -> tuple[asyncio.subprocess.Process, str]:
    port = free_port()
    env = {**os.environ, **environ, "PATCHBAY_PORT": str(port), "PATCHBAY_WORKERS": str(workers)}
    process = await asyncio.create_subprocess_exec(PATCHBAY, "serve", env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    await wait_ready(f"http://127.0.0.1:{port}/health", process)
    return process, f"http://127.0.0.1:{port}/webhook/facebook"


async def measure_database(label: str, database_url: str, tmp: Path, args, bare_url: str) -> dict[str, float]:
    receiver = await Receiver().start()
    config = tmp / f"{label}.toml"
    config.write_text(f'[providers.facebook]\nwebhook_secret = "{APP_SECRET}"\n')
    environ = {"PATCHBAY_SECRET_KEY": "bench-secret", "PATCHBAY_DATA_DIR": str(tmp / label), "PATCHBAY_DATABASE_URL": database_url,
               "PATCHBAY_SCHEDULER": "false", "PATCHBAY_ALLOW_INSECURE_TARGETS": "true", "PATCHBAY_CONFIG": str(config), "PATCHBAY_LOG_LEVEL": "WARNING"}  # fmt: skip
    await prepare(database_url, environ, receiver.url)
    try:
        # throughput: ingestion only (no workers in the process), like the bare handler
        process, url = await start_patchbay(environ, workers=0)
        try:
            await blast(url, signed_requests(1000), args.concurrency)  # warm-up
            if args.wrk:
                rate, failures, sent = await wrk_blast(url, signed_requests(args.events), args.concurrency, args.seconds, tmp)
            else:
                (rate, failures), sent = await blast(url, signed_requests(args.events), args.concurrency), args.events
        finally:
            await stop(process)
        if args.wrk:
            bare_rate = (await wrk_blast(bare_url, signed_requests(args.events), args.concurrency, args.seconds, tmp))[0]
        else:
            bare_rate, _ = await blast(bare_url, signed_requests(args.events), args.concurrency)
        stored = await drop_backlog(database_url) - 1000  # less the warm-up
        # latency: receipt to forwarded delivery, workers on
        process, url = await start_patchbay(environ, workers=16)
        try:
            forwarded = await latencies(url, signed_requests(args.latency_events), receiver, gap=0.02)
        finally:
            await stop(process)
        bare = await latencies(bare_url, signed_requests(args.latency_events), None, gap=0.02)
    finally:
        await receiver.close()
    return {
        "stored": stored, "sent": sent, "rate": rate, "failures": failures, "bare_rate": bare_rate,
        "p50": statistics.median(forwarded), "p95": statistics.quantiles(forwarded, n=20)[18],
        "bare_p50": statistics.median(bare), "bare_p95": statistics.quantiles(bare, n=20)[18],
    }  # fmt: skip


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=15000)
    parser.add_argument("--latency-events", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--seconds", type=int, default=8, help="duration of a wrk run")
    parser.add_argument("--no-wrk", dest="wrk", action="store_false", help="use the Python load generator even when wrk is installed")
    args = parser.parse_args()
    args.wrk = args.wrk and shutil.which("wrk") is not None
    bare_port = free_port()
    bare = await asyncio.create_subprocess_exec(sys.executable, "-c", BARE, str(bare_port))
    await wait_ready(f"http://127.0.0.1:{bare_port}/", bare)
    bare_url = f"http://127.0.0.1:{bare_port}/"
    pg_url = os.environ.get("PATCHBAY_BENCH_PG_URL") or os.environ.get("PATCHBAY_TEST_DATABASE_URL")
    results = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp_path = Path(tmp)
            results["sqlite"] = await measure_database("sqlite", f"sqlite+aiosqlite:///{tmp_path / 'bench.db'}", tmp_path, args, bare_url)
            if pg_url:
                name = f"pbbench_{os.getpid()}"
                admin = pg_url.replace("postgresql+asyncpg://", "postgresql://", 1)
                connection = await asyncpg.connect(admin)
                await connection.execute(f'CREATE DATABASE "{name}"')
                try:
                    results["postgresql"] = await measure_database("postgresql", f"{pg_url.rpartition('/')[0]}/{name}", tmp_path, args, bare_url)
                finally:
                    await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                    await connection.close()
            else:
                print("PostgreSQL skipped: set PATCHBAY_TEST_DATABASE_URL or PATCHBAY_BENCH_PG_URL")
    finally:
        await stop(bare)
    generator = f"wrk, {args.seconds} s" if args.wrk else f"aiohttp client, {args.events} events"
    print(f"signed events at concurrency {args.concurrency} ({generator}); latency over {args.latency_events} events sent one at a time")
    print(f"{'database':<11} {'accepted/s':>11} {'bare 200/s':>11} {'ratio':>6}  {'fwd p50 ms':>10} {'fwd p95 ms':>10} {'bare p50 ms':>11} {'ratio p50':>9}")
    for label, r in results.items():
        print(f"{label:<11} {r['rate']:>11.0f} {r['bare_rate']:>11.0f} {r['rate'] / r['bare_rate']:>6.2f}  {r['p50']:>10.1f} {r['p95']:>10.1f} "
              f"{r['bare_p50']:>11.2f} {r['p50'] / r['bare_p50']:>9.1f}")  # fmt: skip
        if r["stored"] < r["sent"] - r["failures"]:  # more is fine: requests in flight when wrk stopped
            print(f"  {label}: LOST EVENTS: {r['stored']} events stored for {r['sent'] - r['failures']} answered 200")
        if r["failures"]:
            print(f"  {label}: {r['failures']} requests were not answered 200")


if __name__ == "__main__":
    asyncio.run(main())
