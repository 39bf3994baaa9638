"""Token endpoint throughput: client_credentials tokens per second and latency (p50, p99) of one
``patchbay serve`` process, against node-oidc-provider issuing RS256 JWT access tokens on the same
machine in the same run, and against the raw RS256 signing rate of ``cryptography`` (the physical
limit: one thread, and one thread per core since signing releases the GIL).

    python benchmarks/token_endpoint.py [--seconds 8] [--concurrency 32] [--rounds 3] [--baseline-tree DIR] [--py-spy DIR]

Both servers are driven by the same load generator, keep-alive connections: ``wrk`` when it is
installed (``apt-get install wrk``; a C generator takes little of the CPU the servers share with it),
else aiohttp in its own process; the rate limits of 8B are turned off for the run. node-oidc-provider needs Node.js; its npm packages
are the ones of tests/identity/node (installed on first use).

``--baseline-tree DIR`` also runs ``patchbay serve`` from another source tree (for example ``git
archive <commit> | tar -x -C DIR``), measured in the same rounds, and prints this tree's CPU per token
against it round by round: a before/after that the machine's load drift does not decide. With wrk,
the CPU per token of the server's main thread is printed too (patchbay's event loop, without its
signing threads; node's main thread): what the per-request Python costs, apart from the signature.

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
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from profiles import print_shares, start_py_spy, stop_py_spy
from source_trees import package_folder

NODE_DIR = Path(__file__).resolve().parents[1] / "tests" / "identity" / "node"
PATCHBAY = str(Path(sys.executable).parent / "patchbay")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, timeout: float = 60) -> None:
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
    """User + system CPU time of a process so far (Linux; nan elsewhere)."""
    return cpu_seconds_of(Path(f"/proc/{pid}/stat"))


def main_thread_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process's first thread (patchbay's event loop; node's main
    thread) so far (Linux; nan elsewhere)."""
    return cpu_seconds_of(Path(f"/proc/{pid}/task/{pid}/stat"))


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


def start_patchbay(data_dir: Path, source: Path | None = None) -> tuple[subprocess.Popen, str]:
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


def start_node_provider() -> tuple[subprocess.Popen, str] | None:
    if not shutil.which("node") or not shutil.which("npm"):
        return None
    if not (NODE_DIR / "node_modules" / "oidc-provider").exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE_DIR, check=True, timeout=600)
    port = free_port()
    process = subprocess.Popen(
        ["node", str(NODE_DIR / "oidc_provider_bench.mjs")],
        cwd=NODE_DIR,
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    issuer = json.loads(process.stdout.readline())["issuer"]
    return process, issuer


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
    parser.add_argument("--rounds", type=int, default=3, help="rounds alternating patchbay and node-oidc-provider")
    parser.add_argument("--baseline-tree", metavar="DIR", type=Path, help="also run patchbay from this source tree and compare CPU per token round by round")
    parser.add_argument(
        "--py-spy", metavar="DIR", type=Path, help="sample patchbay's thread holding the GIL with py-spy through the rounds; shares of its samples printed"
    )
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    generator = "wrk" if shutil.which("wrk") else "aiohttp"
    print(
        f"machine: {cores} cores, load average {os.getloadavg()[0]:.1f}; {args.rounds} rounds of {args.seconds:.0f} s per contender, "
        f"alternating; {args.concurrency} concurrent keep-alive connections ({generator})"
    )
    print(
        "patchbay settings that differ from the defaults: rate limits oidc_token, oidc_register, connect_api off; "
        "PATCHBAY_SCHEDULER=false; SQLite in a scratch directory; the job workers and the access log are on (to serve.log there)"
    )

    first = (signing_rate(2, 1), signing_rate(2, cores))

    results: dict[str, list[dict[str, float]]] = {"patchbay serve": [], "node-oidc-provider": []}
    baseline_runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as scratch:
        ours, base = start_patchbay(Path(scratch) / "patchbay")
        baseline = None
        if args.baseline_tree:
            baseline = start_patchbay(Path(scratch) / "baseline", package_folder(args.baseline_tree, Path(scratch) / "baseline-package"))
        node = start_node_provider()
        try:
            client = register(base)
            our_form = {"grant_type": "client_credentials", "client_id": client["client_id"], "client_secret": client["client_secret"]}
            node_form = {"grant_type": "client_credentials", "client_id": "bench", "client_secret": "bench-secret", "scope": "api"}
            if baseline is not None:
                old = register(baseline[1])
                old_form = {"grant_type": "client_credentials", "client_id": old["client_id"], "client_secret": old["client_secret"]}
            profiler = start_py_spy(ours.pid, args.py_spy / "token.txt", gil=True) if args.py_spy else None
            for number in range(args.rounds):
                # this tree and the baseline take turns at going first: a load that rises or falls
                # through a round must not always land on the same one
                if baseline is not None and number % 2:
                    baseline_runs.append(drive(baseline[1] + "/api/v1/oidc/token", old_form, args.seconds, args.concurrency, baseline[0].pid))
                results["patchbay serve"].append(drive(base + "/api/v1/oidc/token", our_form, args.seconds, args.concurrency, ours.pid))
                if baseline is not None and not number % 2:
                    baseline_runs.append(drive(baseline[1] + "/api/v1/oidc/token", old_form, args.seconds, args.concurrency, baseline[0].pid))
                if node is not None:
                    results["node-oidc-provider"].append(drive(node[1] + "/token", node_form, args.seconds, args.concurrency, node[0].pid))
            if profiler is not None:
                stop_py_spy(profiler)
        finally:
            for process in (ours, baseline[0] if baseline is not None else None):
                if process is not None:
                    process.send_signal(signal.SIGINT)
                    process.wait(timeout=15)
            if node is not None:
                node[0].terminate()
                node[0].wait(timeout=15)
    if node is None:
        print("node-oidc-provider: skipped (Node.js and npm are needed)")
        del results["node-oidc-provider"]

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
        per_round = ", ".join(f"{a['rate'] / b['rate']:.2f}" for a, b in zip(results["patchbay serve"], results["node-oidc-provider"], strict=True))
        print(f"patchbay / node-oidc-provider, tokens/s (medians):   {ours_m['rate'] / theirs['rate']:.2f}x   (per round: {per_round})")
        print(f"node-oidc-provider / patchbay, CPU per token:        {theirs['cpu_ms'] / ours_m['cpu_ms']:.2f}x")
    print(f"patchbay / RS256 signing on one thread:              {ours_m['rate'] / sign_one:.2f}x")
    print(f"patchbay / RS256 signing on {cores} threads:               {ours_m['rate'] / sign_all:.2f}x  (the physical limit)")
    print(f"patchbay CPU per token / CPU per signature:          {ours_m['cpu_ms'] / sign_ms:.2f}x")
    if baseline_runs:
        print(f"\nbaseline tree {args.baseline_tree}, same rounds:")
        for number, r in enumerate(baseline_runs, 1):
            print(
                f"{number:<7}{'baseline patchbay':<22}{r['rate']:>10,.0f}{r['p50_ms']:>10.1f}{r['p99_ms']:>10.1f}{r['errors']:>8}{r['cpu_ms']:>14.2f}{r['loop_ms']:>13.2f}"
            )
        cpu = [a["cpu_ms"] / b["cpu_ms"] for a, b in zip(results["patchbay serve"], baseline_runs, strict=True)]
        rate = [a["rate"] / b["rate"] for a, b in zip(results["patchbay serve"], baseline_runs, strict=True)]
        print(f"this tree / baseline, CPU per token (below 1: cheaper): {statistics.median(cpu):.2f}x (per round: {', '.join(f'{x:.2f}' for x in cpu)})")
        loop = [a["loop_ms"] / b["loop_ms"] for a, b in zip(results["patchbay serve"], baseline_runs, strict=True)]
        print(f"this tree / baseline, event-loop thread CPU per token:  {statistics.median(loop):.2f}x (per round: {', '.join(f'{x:.2f}' for x in loop)})")
        print(f"this tree / baseline, tokens/s:                         {statistics.median(rate):.2f}x (per round: {', '.join(f'{x:.2f}' for x in rate)})")
    if args.py_spy:
        print()
        print_shares(args.py_spy / "token.txt")


if __name__ == "__main__":
    main()
