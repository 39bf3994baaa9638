"""Proxy throughput: requests per second and latency (p50, p99) of calls through patchbay's proxy to a
local upstream, in both forms, against a naive aiohttp proxy and the upstream called directly, all
measured in the same run; prints the ratios.

    python benchmarks/proxy.py [--seconds 10] [--rounds 3] [--connections 50] [--auth api_key|token]
                               [--database-url postgresql+asyncpg://...] [--log-level WARNING] [--profile FILE]
                               [--py-spy DIR] [--baseline-tree DIR] [--processes 1,2]

Load: ``wrk`` (one thread, keep-alive connections; ``apt-get install wrk``). Processes: the upstream
(a small aiohttp JSON API), patchbay (one process, started as ``patchbay serve`` starts it: default
settings, JSON access log, job workers), a naive aiohttp proxy (no authentication, lookup, limits
or audit; it does parse the envelope form's JSON) and wrk. Everything of a real patchbay call is on:
caller authentication (an API key, or with ``--auth token`` an access token of patchbay's identity
provider), the connection lookup and credential injection, the connect API throttle and the
per-connection rate limit (set high enough not to refuse), and the audit log (one row per call).
Settings that differ from the defaults are printed. Targets are measured in rotated order each
round (the machine's load drifts); ratios are medians of the per-round ratios.

``--py-spy DIR`` samples the patchbay process's thread holding the GIL through the rounds
(``DIR/proxy.txt``, collapsed stacks) and prints where its samples go (``benchmarks/profiles.py``);
py-spy pauses the process to sample, so that run's rates are not the ones to quote.

``--processes 1,2`` also runs patchbay with 2 processes sharing its port (as ``patchbay serve
--processes 2`` runs them: one port bound once, forked processes), measured in the same rounds as
``patchbay<N>``, and prints its rate against the first count's; CPU is the sum over its processes.

``--baseline-tree DIR`` also runs patchbay from another source tree (for example ``git archive
<commit> | tar -x -C DIR``) as a second process measured in the same rounds, and prints the CPU per
call of this tree against it round by round: a before/after that the machine's load drift does not
decide.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import aiohttp
from _common import add_processes_option, loop_name, serve, serve_loop, serve_processes, server_app, start_process, tree_cpu_seconds
from aiohttp import web
from profiles import print_shares, start_py_spy, stop_py_spy
from source_trees import package_folder

ITEM_PATH = "/items/1"
ENVELOPE = json.dumps({"method": "GET", "path": ITEM_PATH})
UPSTREAM_KEY = "upstream-key"

# ---------------------------------------------------------------------------------------------
# The processes under load: each serves until SIGTERM, then cleans up (sessions closed, audit
# rows written).
# ---------------------------------------------------------------------------------------------


def _upstream(out) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"id": request.match_info["id"], "name": "Ada Lovelace", "email": "ada@example.com", "tags": ["a", "b"]})

    app = web.Application()
    app.router.add_get("/v1/items/{id}", handler)
    asyncio.run(serve(app, out, access_log=None))


def _naive_proxy(upstream: str, out) -> None:
    """The reference point: a minimal aiohttp proxy with one shared client session, in both forms."""

    async def session_ctx(app: web.Application):
        async with aiohttp.ClientSession() as app["session"]:
            yield

    async def forward(request: web.Request, method: str, path: str) -> web.Response:
        async with request.app["session"].request(method, f"{upstream}/v1{path}", headers={"Authorization": f"Bearer {UPSTREAM_KEY}"}) as response:
            return web.Response(body=await response.read(), status=response.status, content_type=response.content_type)

    async def passthrough(request: web.Request) -> web.Response:
        return await forward(request, request.method, "/" + request.match_info["path"])

    async def envelope(request: web.Request) -> web.Response:
        body = await request.json()
        return await forward(request, body["method"], body["path"])

    app = web.Application()
    app.cleanup_ctx.append(session_ctx)
    app.router.add_post("/", envelope)
    app.router.add_get("/{path:.+}", passthrough)
    asyncio.run(serve(app, out, access_log=None))


def _flat(value, prefix: str = "") -> dict[str, object]:
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        value = dict(value)
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): value}


def _patchbay(
    upstream: str, data_dir: str, database_url: str | None, log_level: str | None, auth: str, profile: str | None, source: str | None, processes: int, out
) -> None:
    if source:  # the baseline tree's package, before the installed one
        sys.path.insert(0, source)
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    from patchbay import Provider, hookimpl
    from patchbay.core.appkeys import SERVICES
    from patchbay.core.connections.service import connect_with_api_key
    from patchbay.core.http import middleware
    from patchbay.core.http.middleware import JsonAccessLogger
    from patchbay.core.settings import load_settings
    from patchbay.core.testing import create_workspace_with_key, sign_access_token

    class BenchPack:
        @hookimpl
        def register_providers(self):
            return [
                Provider(
                    name="bench",
                    display_name="Bench",
                    category="other",
                    auth_mode="api_key",
                    api_base_url="{server}/v1",
                    connection_params=("server",),
                    connection_param_defaults={"server": upstream},
                )
            ]

    # As `patchbay serve` runs (INFO logs, access log, workers), with what a loopback bench needs.
    base = {"PATCHBAY_SECRET_KEY": "bench-secret", "PATCHBAY_DATA_DIR": data_dir}
    environ = {**base, "PATCHBAY_SCHEDULER": "false", "PATCHBAY_ALLOW_INSECURE_TARGETS": "true"}
    if database_url:
        environ["PATCHBAY_DATABASE_URL"] = database_url
    if log_level:
        environ["PATCHBAY_LOG_LEVEL"] = log_level
    if "PATCHBAY_EVENT_LOOP" in os.environ:  # PATCHBAY_EVENT_LOOP=asyncio measures the loop uvloop replaces
        environ["PATCHBAY_EVENT_LOOP"] = os.environ["PATCHBAY_EVENT_LOOP"]
    settings = load_settings({}, environ)
    settings.rate_limits = {**settings.rate_limits, "connect_api": "100000000/minute", "proxy": "100000000/minute"}
    defaults, chosen = _flat(load_settings({}, base)), _flat(settings)
    changed = {name: value for name, value in chosen.items() if value != defaults.get(name) and not name.startswith("plugin_environ.")}
    log_file = Path(data_dir) / "patchbay.log"
    new_loop = serve_loop(settings)  # the one serve runs; run_processes makes it in each child
    if hasattr(middleware, "configure_logging"):
        middleware.configure_logging(settings.log_level, filename=log_file)  # as serve sets it up, into a file
    else:  # a baseline tree from before configure_logging: as its serve did
        import logging

        logging.basicConfig(level=settings.log_level, filename=log_file, format="%(asctime)s %(levelname)s %(name)s %(message)s")

    async def prepare(app: web.Application) -> dict:
        ws = await create_workspace_with_key(app, plan="enterprise")
        connection = await connect_with_api_key(
            app[SERVICES], workspace_id=ws["workspace_id"], provider_name="bench", credentials={"apiKey": UPSTREAM_KEY}, validate=False
        )
        headers = dict(ws["headers"])
        if auth == "token":
            token = await sign_access_token(app, {"sub": "bench", "organization_id": ws["workspace_id"], "permissions": ["connections.write"]})
            headers = {"Authorization": f"Bearer {token}"}
        headers["x-connection-id"] = connection.id
        return {"headers": headers, "settings": {**changed, "(log file)": str(log_file)}, "event_loop": loop_name(new_loop)}

    if processes > 1:  # as `patchbay serve --processes N` runs them
        serve_processes(lambda **options: server_app(settings, [BenchPack()], **options), processes, out, prepare)
        return
    app = server_app(settings, [BenchPack()])
    if profile:
        import cProfile
        import time

        profiler = cProfile.Profile(time.thread_time)  # CPU time of the event loop's thread, not waits
        profiler.enable()
    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(serve(app, out, prepare, access_log_class=JsonAccessLogger))
    if profile:
        profiler.disable()
        profiler.dump_stats(profile)


# ---------------------------------------------------------------------------------------------
# Load
# ---------------------------------------------------------------------------------------------

WRK_REPORT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK %d %d %d %d %f %f\\n", summary.requests, summary.duration,
    e.connect + e.read + e.write + e.timeout, e.status, latency:percentile(50), latency:percentile(99)))
end
"""


def wrk_script(folder: Path, name: str, method: str, headers: dict[str, str], body: str | None) -> Path:
    lines = [f"wrk.method = {json.dumps(method)}"]
    lines += [f"wrk.headers[{json.dumps(key)}] = {json.dumps(value)}" for key, value in headers.items()]
    if body is not None:
        lines += [f"wrk.body = {json.dumps(body)}", 'wrk.headers["Content-Type"] = "application/json"']
    path = folder / f"{name}.lua"
    path.write_text("\n".join(lines) + WRK_REPORT)
    return path


def wrk(url: str, script: Path, seconds: float, connections: int) -> dict[str, float]:
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--timeout", "5s", "-s", str(script), url]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    fields = next(line for line in output.splitlines() if line.startswith("WRK ")).split()[1:]
    requests, duration_us, socket_errors, status_errors = (int(field) for field in fields[:4])
    return {
        "rps": requests / (duration_us / 1e6),
        "p50_ms": float(fields[4]) / 1000,
        "p99_ms": float(fields[5]) / 1000,
        "errors": socket_errors + status_errors,
        "requests": requests,
    }


def _start(context, processes: list, target, *args):
    return start_process(target, *args, context=context, processes=processes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per target and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the targets; medians are printed")
    parser.add_argument("--connections", type=int, default=50, help="wrk's keep-alive connections (one wrk thread)")
    parser.add_argument("--auth", choices=("api_key", "token"), default="api_key")
    parser.add_argument("--database-url", help="patchbay's database (an empty or bench-only one); default a fresh SQLite file")
    parser.add_argument("--log-level", help="patchbay's log level; WARNING turns the access log off (default INFO: on, as serve runs)")
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile (CPU time) of the patchbay process to FILE (slows it down)")
    parser.add_argument("--py-spy", metavar="DIR", type=Path, help="sample the patchbay process with py-spy through the rounds; shares of its samples printed")
    parser.add_argument("--baseline-tree", metavar="DIR", type=Path, help="also run patchbay from this source tree and compare CPU per call round by round")
    add_processes_option(parser)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed as load generator: apt-get install wrk")
    context = multiprocessing.get_context("spawn")
    processes: list = []
    results: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {}
    try:
        with tempfile.TemporaryDirectory() as folder:
            upstream, port = _start(context, processes, _upstream)
            upstream_url = f"http://127.0.0.1:{port}"
            patchbay, (port, info) = _start(
                context, processes, _patchbay, upstream_url, folder, args.database_url, args.log_level, args.auth, args.profile, None, args.processes[0]
            )
            proxy_url = f"http://127.0.0.1:{port}/connect/v1/proxy/bench"
            naive, port = _start(context, processes, _naive_proxy, upstream_url)
            naive_url = f"http://127.0.0.1:{port}"
            scripts = Path(folder)
            targets = {
                "direct": (f"{upstream_url}/v1{ITEM_PATH}", wrk_script(scripts, "direct", "GET", {"Authorization": f"Bearer {UPSTREAM_KEY}"}, None)),
                "naive passthrough": (f"{naive_url}{ITEM_PATH}", wrk_script(scripts, "naive-pass", "GET", {}, None)),
                "naive envelope": (f"{naive_url}/", wrk_script(scripts, "naive-env", "POST", {}, ENVELOPE)),
                "patchbay passthrough": (f"{proxy_url}{ITEM_PATH}", wrk_script(scripts, "pb-pass", "GET", info["headers"], None)),
                "patchbay envelope": (proxy_url, wrk_script(scripts, "pb-env", "POST", info["headers"], ENVELOPE)),
            }
            pids = {"upstream": upstream.pid, "patchbay": patchbay.pid, "naive": naive.pid}
            for count in args.processes[1:]:  # the same proxy with more processes, measured in the same rounds
                more, (port, more_info) = _start(
                    context, processes, _patchbay, upstream_url, f"{folder}/x{count}", args.database_url, args.log_level, args.auth, None, None, count
                )
                more_url = f"http://127.0.0.1:{port}/connect/v1/proxy/bench"
                targets[f"patchbay{count} passthrough"] = (f"{more_url}{ITEM_PATH}", wrk_script(scripts, f"pb{count}-pass", "GET", more_info["headers"], None))
                targets[f"patchbay{count} envelope"] = (more_url, wrk_script(scripts, f"pb{count}-env", "POST", more_info["headers"], ENVELOPE))
                pids[f"patchbay{count}"] = more.pid
            if args.baseline_tree:
                source = package_folder(args.baseline_tree, Path(folder) / "baseline-package")
                baseline, (port, baseline_info) = _start(
                    context, processes, _patchbay, upstream_url, f"{folder}/baseline", args.database_url, args.log_level, args.auth, None, str(source), 1
                )
                baseline_url = f"http://127.0.0.1:{port}/connect/v1/proxy/bench"
                targets["baseline passthrough"] = (f"{baseline_url}{ITEM_PATH}", wrk_script(scripts, "base-pass", "GET", baseline_info["headers"], None))
                targets["baseline envelope"] = (baseline_url, wrk_script(scripts, "base-env", "POST", baseline_info["headers"], ENVELOPE))
                pids["baseline"] = baseline.pid
            for url, script in targets.values():  # warm up: connections, caches, the JIT-less interpreter's caches
                wrk(url, script, 1, args.connections)
            names = list(targets)
            profiler = start_py_spy(patchbay.pid, args.py_spy / "proxy.txt", gil=True) if args.py_spy else None
            for round_ in range(args.rounds):
                shift = round_ % len(names)
                for name in names[shift:] + names[:shift]:
                    before = {process: tree_cpu_seconds(pid) for process, pid in pids.items()}
                    figures = wrk(*targets[name], args.seconds, args.connections)
                    cpu = {process: tree_cpu_seconds(pid) - before[process] for process, pid in pids.items()}
                    results.setdefault(name, []).append((figures, cpu))
            if profiler is not None:
                stop_py_spy(profiler)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(30)
    report(args, info["settings"], info["event_loop"], results)
    if args.py_spy:
        print_shares(args.py_spy / "proxy.txt")
    if any(figures["errors"] for runs in results.values() for figures, _ in runs):
        sys.exit(1)


def report(args, settings: dict[str, object], event_loop: str, results: dict[str, list[tuple[dict[str, float], dict[str, float]]]]) -> None:
    def median(name: str, key: str) -> float:
        return statistics.median(figures[key] for figures, _ in results[name])

    def ratio(name: str, baseline: str) -> float:
        return statistics.median(a[0]["rps"] / b[0]["rps"] for a, b in zip(results[name], results[baseline], strict=True))

    def cpu_us(name: str, process: str) -> float:
        return sum(cpu[process] for _, cpu in results[name]) / max(1, sum(f["requests"] for f, _ in results[name])) * 1e6

    print(
        f"proxy benchmark: wrk -t1 -c{args.connections}, {args.rounds} rounds x {args.seconds:g} s per target (rotated order), "
        f"GET {ITEM_PATH} of a loopback upstream, caller auth {args.auth}"
    )
    print(f"patchbay processes: {args.processes[0]}" + "".join(f"; patchbay{n}: the same with {n} processes" for n in args.processes[1:]))
    print("patchbay settings that differ from the defaults:")
    for name, value in sorted(settings.items()):
        print(f"  {name} = {value}")
    print(f"patchbay event loop: {event_loop}")
    print(f"{'':21} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6} {'CPU us/req':>10}   (medians of the rounds)")
    for name in results:
        process = "upstream" if name == "direct" else name.split()[0]
        errors = sum(int(figures["errors"]) for figures, _ in results[name])
        print(f"{name:21} {median(name, 'rps'):8.0f} {median(name, 'p50_ms'):7.2f} {median(name, 'p99_ms'):7.2f} {errors:6d} {cpu_us(name, process):10.0f}")
    for form in ("passthrough", "envelope"):
        print(
            f"{form:12} patchbay/naive {ratio(f'patchbay {form}', f'naive {form}'):.2f}x   patchbay/direct {ratio(f'patchbay {form}', 'direct'):.2f}x   "
            f"naive/direct {ratio(f'naive {form}', 'direct'):.2f}x"
        )
    for count in args.processes[1:]:
        for form in ("passthrough", "envelope"):
            print(
                f"{form:12} {count} processes / {args.processes[0]}: req/s {ratio(f'patchbay{count} {form}', f'patchbay {form}'):.2f}x   "
                f"patchbay{count}/naive {ratio(f'patchbay{count} {form}', f'naive {form}'):.2f}x"
            )
    if args.baseline_tree:
        print(f"against the baseline tree {args.baseline_tree} (CPU per call of this tree / the baseline's, per round; below 1: cheaper):")
        for form in ("passthrough", "envelope"):
            mine, theirs = results[f"patchbay {form}"], results[f"baseline {form}"]
            rounds = [(a[1]["patchbay"] / a[0]["requests"]) / (b[1]["baseline"] / b[0]["requests"]) for a, b in zip(mine, theirs, strict=True)]
            print(
                f"{form:12} "
                + " ".join(f"{value:.2f}" for value in rounds)
                + f"   median {statistics.median(rounds):.2f}x   req/s {ratio(f'patchbay {form}', f'baseline {form}'):.2f}x"
            )


if __name__ == "__main__":
    main()
