"""Token endpoint throughput: client_credentials tokens per second and latency (p50, p99) of one
``patchbay serve`` process, against node-oidc-provider issuing RS256 JWT access tokens on the same
machine in the same run, and against the raw RS256 signing rate of ``cryptography`` (the physical
limit: one thread, and one thread per core since signing releases the GIL).

    python benchmarks/token_endpoint.py [--seconds 8] [--concurrency 32] [--rounds 3] [--baseline-tree DIR] [--py-spy DIR]
                                        [--processes 1,2]

Both servers are driven by the same load generator, keep-alive connections: ``wrk`` when it is
installed (``apt-get install wrk``; a C generator takes little of the CPU the servers share with it),
else aiohttp in its own process; the rate limits of 8B are turned off for the run. node-oidc-provider needs Node.js; its npm packages
are the ones of tests/identity/node (installed on first use).

``--baseline-tree DIR`` also runs ``patchbay serve`` from another source tree (for example ``git
archive <commit> | tar -x -C DIR``), measured in the same rounds, and prints this tree's CPU per token
against it round by round: a before/after that the machine's load drift does not decide. With wrk,
the CPU per token of the server's main thread is printed too (patchbay's event loop, without its
signing threads; node's main thread): what the per-request Python costs, apart from the signature.

``--processes 1,2`` runs ``patchbay serve --processes 1`` and ``--processes 2`` side by side, and
node-oidc-provider at one process and at two (Node's ``cluster`` module: a primary forking two workers
that share the port and sign with one key), all measured in the same rounds. It prints patchbay's
second server against its first, patchbay against node-oidc-provider at two processes (tokens/s and
CPU per token) and node's two processes against its one. CPU is summed over a server's processes
(node's primary included); its "main thread" over its processes' main threads. Without it, one
process each. Each round drives every contender in turn, the order reversed every other round, with
the pairs compared side by side.

``--py-spy DIR`` samples patchbay's thread holding the GIL through the rounds (``DIR/token.txt``,
collapsed stacks) and prints where its samples go (``benchmarks/profiles.py``); py-spy pauses the
server to sample, so that run's rates are not the ones to quote.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from _common import add_processes_option, children, event_loop_line, free_port, tree_cpu_seconds
from profiles import print_shares, start_py_spy, stop_py_spy
from source_trees import package_folder

NODE_DIR = Path(__file__).resolve().parents[1] / "tests" / "identity" / "node"
PATCHBAY = str(Path(sys.executable).parent / "patchbay")


def wait_until_up(url: str, timeout: float = 300) -> None:  # a loaded machine starts slowly
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


# -- load generator (a separate process, so that it does not share the servers' event loops) ------


def _load(url: str, form: dict[str, str], seconds: float, concurrency: int, warmup: float, out) -> None:
    import aiohttp

    async def main() -> None:
        latencies: list[float] = []
        errors = 0
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as http:
            stop_at = time.perf_counter() + warmup + seconds
            measure_from = time.perf_counter() + warmup

            async def worker() -> None:
                nonlocal errors
                while (now := time.perf_counter()) < stop_at:
                    async with http.post(url, data=form) as response:
                        body = await response.read()
                        if response.status != 200 or b"access_token" not in body:
                            errors += 1
                    if now >= measure_from:
                        latencies.append(time.perf_counter() - now)

            await asyncio.gather(*(worker() for _ in range(concurrency)))
        out.send({"count": len(latencies), "errors": errors, "seconds": seconds, "latencies": latencies})

    asyncio.run(main())


WRK_SCRIPT = """
wrk.method = "POST"
wrk.body = "{body}"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
"""


def _ms(text: str) -> float:
    value = float(re.match(r"[\d.]+", text).group())
    return value / 1000 if text.endswith("us") else value * 1000 if text.endswith("s") and not text.endswith("ms") else value


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its children (``serve --processes N``) so far."""
    return tree_cpu_seconds(pid)


def main_thread_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process's first thread (patchbay's event loop; node's main
    thread) so far, summed over its children's (Linux; nan elsewhere)."""
    return cpu_seconds_of(Path(f"/proc/{pid}/task/{pid}/stat")) + sum(main_thread_cpu_seconds(child) for child in children(pid))


def cpu_seconds_of(stat: Path) -> float:
    try:
        fields = stat.read_text().rpartition(")")[2].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def drive_wrk(url: str, form: dict[str, str], seconds: float, concurrency: int, pid: int) -> dict[str, float]:
    """wrk (C, one thread) as the load generator: it costs the servers far less CPU than Python.
    Also measures the server's CPU time per token, which a busy machine disturbs less than the rate."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT.format(body=urlencode(form)))
    try:
        subprocess.run(["wrk", "-t1", f"-c{concurrency}", "-d2s", "-s", script.name, url], capture_output=True, check=True)  # warm-up
        before, loop_before = cpu_seconds(pid), main_thread_cpu_seconds(pid)
        out = subprocess.run(
            ["wrk", "-t1", f"-c{concurrency}", f"-d{int(seconds)}s", "--latency", "-s", script.name, url], capture_output=True, text=True, check=True
        ).stdout
        spent, loop_spent = cpu_seconds(pid) - before, main_thread_cpu_seconds(pid) - loop_before
    finally:
        os.unlink(script.name)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    total = int(re.search(r"(\d+) requests in", out).group(1))
    return {
        "rate": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "p50_ms": _ms(re.search(r"\s50%\s+(\S+)", out).group(1)),
        "p99_ms": _ms(re.search(r"\s99%\s+(\S+)", out).group(1)),
        "errors": int(errors.group(1)) if errors else 0,
        "cpu_ms": spent * 1000 / total if total else float("nan"),
        "loop_ms": loop_spent * 1000 / total if total else float("nan"),
    }


def drive(url: str, form: dict[str, str], seconds: float, concurrency: int, pid: int) -> dict[str, float]:
    if shutil.which("wrk"):
        return drive_wrk(url, form, seconds, concurrency, pid)
    receive, send = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.Process(target=_load, args=(url, form, seconds, concurrency, 1.5, send))
    process.start()
    result = receive.recv()
    process.join()
    latencies = sorted(result["latencies"])
    return {
        "rate": result["count"] / result["seconds"],
        "p50_ms": statistics.median(latencies) * 1000 if latencies else float("nan"),
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000 if latencies else float("nan"),
        "errors": result["errors"],
        "cpu_ms": float("nan"),
        "loop_ms": float("nan"),
    }


# -- the contenders -------------------------------------------------------------------------------


def start_patchbay(data_dir: Path, source: Path | None = None, processes: int = 1) -> tuple[subprocess.Popen, str]:
    """``patchbay serve`` of the installed package, or of the package folder ``source`` (first on
    the path, before the installed one)."""
    port = free_port()
    config = data_dir / "bench.toml"
    data_dir.mkdir(parents=True, exist_ok=True)
    config.write_text("[rate_limits]\n" + "".join(f'{key} = "off"\n' for key in ("oidc_token", "oidc_register", "connect_api")))
    env = {
        **os.environ,
        "PATCHBAY_DATA_DIR": str(data_dir),
        "PATCHBAY_PORT": str(port),
        "PATCHBAY_SECRET_KEY": "bench-secret",
        "PATCHBAY_BASE_URL": f"http://127.0.0.1:{port}",
        "PATCHBAY_SCHEDULER": "false",
        "PATCHBAY_CONFIG": str(config),
        "PATCHBAY_PROCESSES": str(processes),  # serve --processes (a tree from before it ignores it)
    }
    env.pop("PATCHBAY_DATABASE_URL", None)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    with (data_dir / "serve.log").open("wb") as log:  # the access log, on as by default
        process = subprocess.Popen([PATCHBAY, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    wait_until_up(base + "/health")
    return process, base


def register(base: str) -> dict[str, str]:
    body = json.dumps(
        {"client_name": "bench", "redirect_uris": ["https://bench.example/cb"], "grant_types": ["client_credentials"], "scope": "openid"}
    ).encode()
    request = urllib.request.Request(base + "/api/v1/oidc/register", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())


NODE_FORM = {"grant_type": "client_credentials", "client_id": "bench", "client_secret": "bench-secret", "scope": "api"}


def node_available() -> bool:
    return bool(shutil.which("node") and shutil.which("npm"))


def node_name(processes: int) -> str:
    return "node-oidc-provider" if processes == 1 else f"node-oidc-provider x{processes}"


def client_form(base: str) -> dict[str, str]:
    """The token request of a client registered on the patchbay at ``base``."""
    client = register(base)
    return {"grant_type": "client_credentials", "client_id": client["client_id"], "client_secret": client["client_secret"]}


def start_node_provider(processes: int = 1) -> tuple[subprocess.Popen, str, dict]:
    """node-oidc-provider on a free port: one process, or ``processes`` workers of Node's cluster
    module sharing the port (one signing key). Answers the process (the primary), the issuer and
    what the server said when it started (its ``scheduling`` of connections among the workers)."""
    if not (NODE_DIR / "node_modules" / "oidc-provider").exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE_DIR, check=True, timeout=600)
    port = free_port()
    process = subprocess.Popen(
        ["node", str(NODE_DIR / "oidc_provider_bench.mjs")],
        cwd=NODE_DIR,
        env={**os.environ, "PORT": str(port), "PROCESSES": str(processes)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    started = json.loads(process.stdout.readline() or "null")
    if not started:
        raise RuntimeError(f"node-oidc-provider with {processes} processes did not start (exit status {process.wait()})")
    return process, started["issuer"], started


def print_node_settings(nodes: dict[int, tuple[subprocess.Popen, str, dict]]) -> None:
    scheduling = {"rr": "handed to the workers round-robin by the primary", "none": "spread by the operating system"}
    print(
        "node-oidc-provider settings: one process"
        + "".join(
            f" (and a second server with {n} processes: Node's cluster module, a primary and {n} workers sharing the port, "
            f"connections {scheduling[started['scheduling']]})"
            for n, (_, _, started) in nodes.items()
            if n > 1
        )
    )


def stop_servers(servers: list[subprocess.Popen]) -> None:
    """SIGINT to each server (``patchbay serve`` and node's cluster primary stop their processes)."""
    for process in servers:
        process.send_signal(signal.SIGINT)
    for process in servers:
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- the rounds -----------------------------------------------------------------------------------


def round_order(contenders: dict, patchbay_names: dict[int, str], baseline: str) -> list[str]:
    """The contenders in the order of the first round, the ones compared side by side: the baseline
    tree beside this tree's first server, each patchbay beside node-oidc-provider at its count."""
    order = [baseline]
    for n, name in patchbay_names.items():
        order += [name, node_name(n)]
    order.append(node_name(1))
    return list(dict.fromkeys(name for name in order if name in contenders))


def run_rounds(contenders: dict[str, tuple[subprocess.Popen, str, dict[str, str]]], order: list[str], args) -> dict[str, list[dict[str, float]]]:
    """``args.rounds`` rounds driving each contender in turn. The order reverses every round, so of
    any two contenders each goes first in half the rounds: a load that rises or falls through a
    round must not always land on the same one."""
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in order}
    for number in range(args.rounds):
        for name in reversed(order) if number % 2 else order:
            process, url, form = contenders[name]
            runs[name].append(drive(url, form, args.seconds, args.concurrency, process.pid))
    return runs


def per_round(runs: list[dict[str, float]], others: list[dict[str, float]], key: str = "rate") -> list[float]:
    return [a[key] / b[key] for a, b in zip(runs, others, strict=True)]


def listed(ratios: list[float]) -> str:
    return ", ".join(f"{x:.2f}" for x in ratios)


def signing_rate(seconds: float, threads: int) -> tuple[float, float]:
    """Raw RS256 signatures per second over a typical access-token payload, and the CPU
    milliseconds one signature costs."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    message = b"eyJhbGciOiJSUzI1NiIsImtpZCI6ImJlbmNoIiwidHlwIjoiYXQrand0In0." + b"x" * 400
    counts = [0] * threads
    stop = time.perf_counter() + seconds

    def run(index: int) -> None:
        while time.perf_counter() < stop:
            key.sign(message, padding.PKCS1v15(), hashes.SHA256())
            counts[index] += 1

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    cpu = time.process_time()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    cpu = time.process_time() - cpu
    return sum(counts) / seconds, cpu * 1000 / max(1, sum(counts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3, help="rounds driving every contender in turn, the order reversed every round")
    parser.add_argument("--baseline-tree", metavar="DIR", type=Path, help="also run patchbay from this source tree and compare CPU per token round by round")
    parser.add_argument(
        "--py-spy", metavar="DIR", type=Path, help="sample patchbay's thread holding the GIL with py-spy through the rounds; shares of its samples printed"
    )
    add_processes_option(parser)
    args = parser.parse_args()
    if len(set(args.processes)) < len(args.processes):
        parser.error("--processes: each count once")
    cores = os.cpu_count() or 1
    generator = "wrk" if shutil.which("wrk") else "aiohttp"
    print(
        f"machine: {cores} cores, load average {os.getloadavg()[0]:.1f}; {args.rounds} rounds of {args.seconds:.0f} s per contender, "
        f"the order reversed every round; {args.concurrency} concurrent keep-alive connections ({generator})"
    )
    print(
        "patchbay settings that differ from the defaults: rate limits oidc_token, oidc_register, connect_api off; "
        f"PATCHBAY_SCHEDULER=false; SQLite in a scratch directory; the job workers and the access log are on (to serve.log there); "
        f"--processes {args.processes[0]}" + "".join(f" (and a second server with --processes {n})" for n in args.processes[1:])
    )
    print(f"patchbay {event_loop_line()}" + (" (the baseline tree's: its own)" if args.baseline_tree else ""))

    first = (signing_rate(2, 1), signing_rate(2, cores))

    # the contenders, each a server with its client's form; patchbay at each count of --processes,
    # node-oidc-provider at one process and at each larger count of --processes
    patchbay_names = {args.processes[0]: "patchbay serve", **{n: f"patchbay serve x{n}" for n in args.processes[1:]}}
    node_counts = sorted({n for n in args.processes if n > 1})
    contenders: dict[str, tuple[subprocess.Popen, str, dict[str, str]]] = {}
    baseline_name = "baseline patchbay"
    nodes: dict[int, tuple[subprocess.Popen, str, dict]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        servers: list[subprocess.Popen] = []
        try:
            for n, name in patchbay_names.items():
                process, base = start_patchbay(Path(scratch) / name.replace(" ", "-"), processes=n)
                servers.append(process)
                contenders[name] = (process, base + "/api/v1/oidc/token", client_form(base))
            if args.baseline_tree:
                package = package_folder(args.baseline_tree, Path(scratch) / "baseline-package")
                process, base = start_patchbay(Path(scratch) / "baseline", package)
                servers.append(process)
                contenders[baseline_name] = (process, base + "/api/v1/oidc/token", client_form(base))
            nodes = {n: start_node_provider(n) for n in [1, *node_counts]} if node_available() else {}
            for n, (process, issuer, _) in nodes.items():
                servers.append(process)
                contenders[node_name(n)] = (process, issuer + "/token", NODE_FORM)
            if nodes:
                print_node_settings(nodes)
            profiler = start_py_spy(contenders["patchbay serve"][0].pid, args.py_spy / "token.txt", gil=True) if args.py_spy else None
            measured = run_rounds(contenders, round_order(contenders, patchbay_names, baseline_name), args)
            if profiler is not None:
                stop_py_spy(profiler)
        finally:
            stop_servers(servers)
    results = {name: measured[name] for name in contenders if name != baseline_name}
    baseline_runs = measured.get(baseline_name, [])
    if not nodes:
        print("node-oidc-provider: skipped (Node.js and npm are needed)")

    # the signing limit is measured before and after the servers, the better of the two counts
    second = (signing_rate(2, 1), signing_rate(2, cores))
    sign_one, sign_all = max(first[0][0], second[0][0]), max(first[1][0], second[1][0])
    sign_ms = min(first[0][1], second[0][1])
    print(f"cryptography RS256 signing: {sign_one:,.0f}/s on one thread, {sign_all:,.0f}/s on {cores} threads, {sign_ms:.2f} CPU ms each")
    print(f"\n{'round':<7}{'contender':<22}{'tokens/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'errors':>8}{'CPU ms/token':>14}{'main thread':>13}")
    for name, runs in results.items():
        for number, r in enumerate(runs, 1):
            print(f"{number:<7}{name:<22}{r['rate']:>10,.0f}{r['p50_ms']:>10.1f}{r['p99_ms']:>10.1f}{r['errors']:>8}{r['cpu_ms']:>14.2f}{r['loop_ms']:>13.2f}")
    median = {name: {key: statistics.median(r[key] for r in runs) for key in ("rate", "cpu_ms")} for name, runs in results.items()}
    ours_m = median["patchbay serve"]
    print()
    if "node-oidc-provider" in median:
        theirs = median["node-oidc-provider"]
        rounds = listed(per_round(results["patchbay serve"], results["node-oidc-provider"]))
        print(f"patchbay / node-oidc-provider, tokens/s (medians):   {ours_m['rate'] / theirs['rate']:.2f}x   (per round: {rounds})")
        print(f"node-oidc-provider / patchbay, CPU per token:        {theirs['cpu_ms'] / ours_m['cpu_ms']:.2f}x")
    for n in args.processes[1:]:
        mine = median[f"patchbay serve x{n}"]
        rounds = listed(per_round(results[f"patchbay serve x{n}"], results["patchbay serve"]))
        print(f"patchbay --processes {n} / --processes {args.processes[0]}, tokens/s:  {mine['rate'] / ours_m['rate']:.2f}x   (per round: {rounds})")
        if "node-oidc-provider" in median:
            print(f"patchbay --processes {n} / node-oidc-provider (one process): {mine['rate'] / median['node-oidc-provider']['rate']:.2f}x")
    for n in node_counts if nodes else ():
        mine, theirs = patchbay_names[n], node_name(n)
        rounds = listed(per_round(results[mine], results[theirs]))
        print(
            f"patchbay --processes {n} / node-oidc-provider {n} processes, tokens/s: {median[mine]['rate'] / median[theirs]['rate']:.2f}x   (per round: {rounds})"
        )
        print(f"node-oidc-provider {n} processes / patchbay --processes {n}, CPU per token: {median[theirs]['cpu_ms'] / median[mine]['cpu_ms']:.2f}x")
        rounds = listed(per_round(results[theirs], results["node-oidc-provider"]))
        print(
            f"node-oidc-provider {n} processes / one process, tokens/s: {median[theirs]['rate'] / median['node-oidc-provider']['rate']:.2f}x   (per round: {rounds})"
        )
    print(f"patchbay / RS256 signing on one thread:              {ours_m['rate'] / sign_one:.2f}x")
    print(f"patchbay / RS256 signing on {cores} threads:               {ours_m['rate'] / sign_all:.2f}x  (the physical limit)")
    print(f"patchbay CPU per token / CPU per signature:          {ours_m['cpu_ms'] / sign_ms:.2f}x")
    if baseline_runs:
        print(f"\nbaseline tree {args.baseline_tree}, same rounds:")
        for number, r in enumerate(baseline_runs, 1):
            print(
                f"{number:<7}{'baseline patchbay':<22}{r['rate']:>10,.0f}{r['p50_ms']:>10.1f}{r['p99_ms']:>10.1f}{r['errors']:>8}{r['cpu_ms']:>14.2f}{r['loop_ms']:>13.2f}"
            )
        cpu, loop, rate = (per_round(results["patchbay serve"], baseline_runs, key) for key in ("cpu_ms", "loop_ms", "rate"))
        print(f"this tree / baseline, CPU per token (below 1: cheaper): {statistics.median(cpu):.2f}x (per round: {listed(cpu)})")
        print(f"this tree / baseline, event-loop thread CPU per token:  {statistics.median(loop):.2f}x (per round: {listed(loop)})")
        print(f"this tree / baseline, tokens/s:                         {statistics.median(rate):.2f}x (per round: {listed(rate)})")
    if args.py_spy:
        print()
        print_shares(args.py_spy / "token.txt")


if __name__ == "__main__":
    main()
