"""The servers ``benchmarks/proxy_instructions.py`` counts start as that script starts them (here
without valgrind) and answer a proxied call: the instruction counts come from a working proxy."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "proxy_instructions.py"


def _serve(kind: str, out: Path, *arguments: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(SCRIPT), "--serve", kind, str(out), *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


async def _sent(process: subprocess.Popen, out: Path):
    """What the server wrote once listening (it writes the file whole, by a rename)."""
    deadline = time.monotonic() + 120
    while not out.exists():
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, f"{out.stem} did not start"
        await asyncio.sleep(0.05)
    return json.loads(out.read_text())


async def test_the_counted_patchbay_server_proxies_a_call_to_the_counted_upstream(tmp_path):
    processes = [_serve("upstream", tmp_path / "upstream.json")]
    try:
        upstream = f"http://127.0.0.1:{await _sent(processes[0], tmp_path / 'upstream.json')}"
        processes.append(_serve("patchbay", tmp_path / "patchbay.json", upstream, str(tmp_path / "data"), ""))
        port, info = await _sent(processes[1], tmp_path / "patchbay.json")
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/connect/v1/proxy/bench/items/7", headers=info["headers"]) as response:
                assert response.status == 200
                assert (await response.json())["id"] == "7"
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
