"""Proxy throughput: requests per second and latency (p50, p99) of GET calls through patchbay's proxy
to a local upstream, against the same upstream called directly in the same run; prints the ratio.

    python benchmarks/proxy.py [--seconds 4] [--rounds 3] [--concurrency 32] [--auth api_key|token]

Processes: the upstream (a small aiohttp JSON API), patchbay (one process, SQLite, the passthrough
proxy route), a naive aiohttp proxy for reference, and the load generator (aiohttp, keep-alive). Everything of a real call is
on: caller authentication (an API key, or with ``--auth token`` an access token of patchbay's
identity provider), the connection lookup (decrypted credentials cached for a few seconds), the
connect API throttle and the per-connection rate limit (limits set high enough not to refuse), the
credential injection, and the audit log (one row per call, inserted in batches).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web

# ---------------------------------------------------------------------------------------------
# The upstream and patchbay, each in its own process
# ---------------------------------------------------------------------------------------------


def _upstream(out) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"id": request.match_info["id"], "name": "Ada Lovelace", "email": "ada@example.com", "tags": ["a", "b"]})

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/v1/items/{id}", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        out.send(site._server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()

    asyncio.run(main())


def _naive_proxy(upstream: str, out) -> None:
    """The reference point: a minimal aiohttp proxy (no authentication, lookup, limits or audit)."""

    async def main() -> None:
        session = aiohttp.ClientSession()

        async def handler(request: web.Request) -> web.Response:
            async with session.get(f"{upstream}/v1/{request.match_info['path']}", headers={"Authorization": "Bearer upstream-key"}) as response:
                return web.Response(body=await response.read(), status=response.status, content_type=response.content_type)

        app = web.Application()
        app.router.add_get("/{path:.*}", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        out.send(site._server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()

    asyncio.run(main())


def _patchbay(upstream: str, data_dir: str, auth: str, profile: str | None, out) -> None:
    import logging

    from patchbay import Provider, hookimpl
    from patchbay.core.app import create_app
    from patchbay.core.connections.service import connect_with_api_key
    from patchbay.core.settings import load_settings
    from patchbay.core.storage.db import Database
    from patchbay.core.storage.migrate import upgrade
    from patchbay.core.testing import create_workspace_with_key, sign_access_token

    logging.disable(logging.WARNING)

    class BenchPack:
        @hookimpl
        def register_providers(self):
            return [Provider(name="bench", display_name="Bench", category="other", auth_mode="api_key", api_base_url="{server}/v1",
                             connection_params=("server",), connection_param_defaults={"server": upstream})]  # fmt: skip

    environ = {"PATCHBAY_SECRET_KEY": "bench-secret", "PATCHBAY_DATA_DIR": data_dir, "PATCHBAY_SCHEDULER": "false",
               "PATCHBAY_ALLOW_INSECURE_TARGETS": "true", "PATCHBAY_WORKERS": "0", "PATCHBAY_LOG_LEVEL": "WARNING"}  # fmt: skip
    settings = load_settings({}, environ)
    settings.rate_limits = {**settings.rate_limits, "connect_api": "100000000/minute", "proxy": "100000000/minute"}

    async def main() -> None:
        db = Database(settings.resolved_database_url)
        await upgrade(db)
        await db.close()
        app = create_app(settings, plugins=[BenchPack()], background=False)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ws = await create_workspace_with_key(app, plan="enterprise")
        connection = await connect_with_api_key(app, workspace_id=ws["workspace_id"], provider_name="bench", credentials={"apiKey": "upstream-key"}, validate=False)
        headers = dict(ws["headers"])
        if auth == "token":
            token = await sign_access_token(app, {"sub": "bench", "organization_id": ws["workspace_id"], "permissions": ["connections.write"]})
            headers = {"Authorization": f"Bearer {token}"}
        headers["x-connection-id"] = connection.id
        out.send((site._server.sockets[0].getsockname()[1], headers))
        await asyncio.Event().wait()

    if profile:
        import cProfile
        import signal

        profiler = cProfile.Profile()

        def dump(*_):
            profiler.disable()
            profiler.dump_stats(profile)
            sys.exit(0)

        signal.signal(signal.SIGTERM, dump)
        profiler.enable()
    asyncio.run(main())


# ---------------------------------------------------------------------------------------------
# Load
# ---------------------------------------------------------------------------------------------


async def _load(url: str, headers: dict[str, str], seconds: float, concurrency: int, warmup: float) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def worker(until: float, record: bool) -> None:
            nonlocal errors
            n = 0
            while time.perf_counter() < until:
                n += 1
                started = time.perf_counter()
                async with session.get(f"{url}/items/{n}", headers=headers) as response:
                    await response.read()
                    if response.status != 200:
                        errors += 1
                if record:
                    latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(worker(time.perf_counter() + warmup, False) for _ in range(concurrency)))
        started = time.perf_counter()
        await asyncio.gather(*(worker(started + seconds, True) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "rps": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
        "errors": errors,
        "requests": len(latencies),
    }


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(pids: dict[str, int], run) -> tuple[dict[str, float], dict[str, float]]:
    """Run the load and answer its figures and the CPU seconds each process spent meanwhile."""
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    figures = run()
    return figures, {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="per target and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the three targets; medians are printed")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--auth", choices=("api_key", "token"), default="api_key")
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile of the patchbay process to FILE (slows it down)")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    processes = []
    results: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {"direct": [], "proxy": [], "naive": []}
    try:
        receive, send = context.Pipe(duplex=False)
        upstream = context.Process(target=_upstream, args=(send,), daemon=True)
        upstream.start()
        processes.append(upstream)
        upstream_url = f"http://127.0.0.1:{receive.recv()}"
        with tempfile.TemporaryDirectory() as data_dir:
            receive, send = context.Pipe(duplex=False)
            patchbay = context.Process(target=_patchbay, args=(upstream_url, str(Path(data_dir)), args.auth, args.profile, send), daemon=True)
            patchbay.start()
            processes.append(patchbay)
            port, headers = receive.recv()
            receive, send = context.Pipe(duplex=False)
            naive = context.Process(target=_naive_proxy, args=(upstream_url, send), daemon=True)
            naive.start()
            processes.append(naive)
            targets = {
                "direct": (f"{upstream_url}/v1", {"Authorization": "Bearer upstream-key"}),
                "proxy": (f"http://127.0.0.1:{port}/connect/v1/proxy/bench", headers),
                "naive": (f"http://127.0.0.1:{receive.recv()}", {}),
            }
            pids = {"upstream": upstream.pid, "patchbay": patchbay.pid, "naive": naive.pid}
            asyncio.run(_load(*targets["proxy"], 1.0, args.concurrency, 0.5))  # warm the caches up
            names = list(targets)
            for round_ in range(args.rounds):
                for name in names[round_ % 3:] + names[: round_ % 3]:  # rotate the order: the machine's load drifts
                    url, target_headers = targets[name]
                    results[name].append(measured(pids, lambda: asyncio.run(_load(url, target_headers, args.seconds, args.concurrency, 0.5))))
    finally:
        for process in processes:
            process.terminate()
            process.join(10)

    def median(name: str, key: str) -> float:
        return statistics.median(figures[key] for figures, _ in results[name])

    def cpu_us(name: str, process: str) -> float:
        return sum(cpu[process] for _, cpu in results[name]) / max(1, sum(f["requests"] for f, _ in results[name])) * 1e6

    def ratio(name: str) -> float:
        return statistics.median(results[name][i][0]["rps"] / results["direct"][i][0]["rps"] for i in range(args.rounds))

    print(f"proxy benchmark: {args.rounds} rounds x {args.seconds:.0f} s per target, {args.concurrency} concurrent keep-alive clients, caller auth {args.auth}")
    print(f"{'':8} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}   (medians of the rounds)")
    for name in ("direct", "proxy", "naive"):
        errors = sum(int(f["errors"]) for f, _ in results[name])
        print(f"{name:8} {median(name, 'rps'):9.0f} {median(name, 'p50_ms'):8.2f} {median(name, 'p99_ms'):8.2f} {errors:7d}")
    print(f"ratio proxy/direct: {ratio('proxy'):.2f}x (requests per second, median of the rounds); "
          f"a naive aiohttp proxy without auth, lookup, limits or audit: {ratio('naive'):.2f}x")
    # CPU per request depends much less on what else the machine runs than the rates above.
    print(f"CPU per request: upstream {cpu_us('direct', 'upstream'):.0f} us (direct) / {cpu_us('proxy', 'upstream'):.0f} us (proxied); "
          f"patchbay {cpu_us('proxy', 'patchbay'):.0f} us per proxied call; naive proxy {cpu_us('naive', 'naive'):.0f} us")
    if any(f["errors"] for runs in results.values() for f, _ in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
