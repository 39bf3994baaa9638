"""Instructions per proxied call, counted by valgrind's callgrind: patchbay's proxy (this tree, and
with ``--baseline-tree`` another one) against the naive aiohttp proxy of ``benchmarks/proxy.py``.

    python benchmarks/proxy_instructions.py [--calls 400] [--concurrency 10] [--baseline-tree DIR]

The servers are the ones ``benchmarks/proxy.py`` runs (the same functions: everything of a real
patchbay call on, JSON access log into a file), each started under ``valgrind --tool=callgrind
--instr-atstart=no``; the upstream runs without valgrind. For each server and form, after a warm-up
the counters are zeroed and switched on (``callgrind_control``), ``--calls`` calls are made by an
aiohttp client at ``--concurrency``, and the instructions the server process executed meanwhile
(every thread: the database driver's and the log writer's too) are divided by the calls.

Unlike CPU time, the count does not depend on what else the machine runs, so a before/after or a
ratio is repeatable on a shared machine. It is not time: a cache miss costs no more than an add.
Needs ``valgrind`` (``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).parent))
from proxy import ENVELOPE, ITEM_PATH, _naive_proxy, _patchbay, _upstream  # noqa: E402 (the benchmark beside this one)
from source_trees import package_folder  # noqa: E402


class _Out:
    """What ``proxy.py``'s server functions send their port (and details) to: a file here."""

    def __init__(self, path: str) -> None:
        self.path = path

    def send(self, value) -> None:
        Path(self.path + ".tmp").write_text(json.dumps(value))
        os.replace(self.path + ".tmp", self.path)


def _serve(kind: str, arguments: list[str], out: str) -> None:
    """Run one server in this process (under valgrind when started so)."""
    sink = _Out(out)
    if kind == "upstream":
        _upstream(sink)
    elif kind == "naive":
        _naive_proxy(arguments[0], sink)
    else:  # patchbay: upstream, data dir, source tree or ""
        upstream, data_dir, source = arguments
        _patchbay(upstream, data_dir, database_url=None, log_level=None, auth="api_key", profile=None, source=source or None, processes=1, out=sink)


def _launch(name: str, kind: str, arguments: list[str], folder: Path, *, valgrind: bool) -> tuple[subprocess.Popen, Path]:
    out = folder / f"{name}.json"
    command = [sys.executable, __file__, "--serve", kind, str(out), *arguments]
    if valgrind:
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={folder}/callgrind.%p", *command]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), out


def _started(process: subprocess.Popen, out: Path) -> object:
    """What the server sent once listening (minutes under valgrind: its imports and start)."""
    deadline = time.monotonic() + 1800
    while not out.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{out.stem} did not start")
        time.sleep(0.5)
    return json.loads(out.read_text())


def _control(pid: int, *options: str) -> str:
    return subprocess.run(["callgrind_control", *options, str(pid)], capture_output=True, text=True, check=True, timeout=300).stdout


def _instructions(pid: int) -> int:
    """Instructions executed by the process since the counters were last zeroed."""
    output = _control(pid, "-e", "Ir")  # "Totals:  Ir" then one "Th N  count" line per thread
    totals = output.split("Totals:", 1)[-1] if "Totals:" in output else ""
    return sum(int(value.replace(",", "")) for value in re.findall(r"^\s*Th\s*\d+\s+([\d,]+)", totals, re.MULTILINE))


async def _calls(url: str, method: str, headers: dict[str, str], body: str | None, calls: int, concurrency: int) -> int:
    failures = 0
    async with aiohttp.ClientSession() as session:

        async def worker(count: int) -> None:
            nonlocal failures
            for _ in range(count):
                async with session.request(method, url, headers=headers, data=body, timeout=aiohttp.ClientTimeout(total=600)) as response:
                    await response.read()
                    failures += response.status != 200

        share, rest = divmod(calls, concurrency)
        await asyncio.gather(*(worker(share + (n < rest)) for n in range(concurrency)))
    return failures


def _measure(pid: int, url: str, method: str, headers: dict[str, str], body: str | None, args) -> float:
    asyncio.run(_calls(url, method, headers, body, max(20, args.calls // 10), args.concurrency))  # warm-up
    _control(pid, "-z")
    _control(pid, "-i", "on")
    failures = asyncio.run(_calls(url, method, headers, body, args.calls, args.concurrency))
    counted = _instructions(pid)  # read while instrumented: switched off, callgrind shows nothing
    _control(pid, "-i", "off")
    if failures:
        raise SystemExit(f"{failures} calls failed")
    if not counted:
        raise SystemExit(f"callgrind counted nothing for {url}")
    return counted / args.calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400, help="calls counted per server and form")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--baseline-tree", type=Path, help="also count patchbay run from this source tree")
    parser.add_argument("--serve", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        kind, out, *arguments = args.serve
        _serve(kind, arguments, out)
        return
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("valgrind is needed: apt-get install valgrind")
    processes: list[subprocess.Popen] = []
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        try:
            upstream, out = _launch("upstream", "upstream", [], folder, valgrind=False)
            processes.append(upstream)
            upstream_url = f"http://127.0.0.1:{_started(upstream, out)}"
            trees = {"patchbay": ""}
            if args.baseline_tree:
                trees["baseline"] = str(package_folder(args.baseline_tree, folder / "baseline-package"))
            launched = {"naive": _launch("naive", "naive", [upstream_url], folder, valgrind=True)}
            for name, source in trees.items():  # all started at once: each takes minutes under valgrind
                launched[name] = _launch(name, "patchbay", [upstream_url, str(folder / name), source], folder, valgrind=True)
            processes += [process for process, _ in launched.values()]
            servers = {}
            for name, (process, out) in launched.items():
                sent = _started(process, out)
                if name == "naive":
                    servers[name] = (process, f"http://127.0.0.1:{sent}", {})
                else:
                    port, info = sent
                    servers[name] = (process, f"http://127.0.0.1:{port}/connect/v1/proxy/bench", info["headers"])
            for name, (process, url, headers) in servers.items():
                results[f"{name} passthrough"] = _measure(process.pid, f"{url}{ITEM_PATH}", "GET", headers, None, args)
                envelope_headers = {**headers, "Content-Type": "application/json"}
                results[f"{name} envelope"] = _measure(process.pid, url if name != "naive" else f"{url}/", "POST", envelope_headers, ENVELOPE, args)
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                try:
                    process.wait(60)
                except subprocess.TimeoutExpired:
                    process.kill()
    print(f"proxy instructions: callgrind, {args.calls} calls per server and form at concurrency {args.concurrency}, GET {ITEM_PATH}, caller auth api_key")
    print(f"{'':22} {'instructions/call':>18}")
    for name, value in results.items():
        print(f"{name:22} {value:18,.0f}")
    for form in ("passthrough", "envelope"):
        line = f"{form:12} naive/patchbay {results[f'naive {form}'] / results[f'patchbay {form}']:.2f}x (above 1: patchbay cheaper)"
        if args.baseline_tree:
            line += f"   patchbay/baseline {results[f'patchbay {form}'] / results[f'baseline {form}']:.2f}x (below 1: this tree cheaper)"
        print(line)


if __name__ == "__main__":
    main()
