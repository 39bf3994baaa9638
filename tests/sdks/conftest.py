"""A ``patchbay serve`` of its own for the SDK tests (one per test process), whose workspaces and API
keys the CLI makes, and ``sdks/generate``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATE = ROOT / "sdks" / "generate"
PATCHBAY = str(Path(sys.executable).with_name("patchbay"))
START_SECONDS = 120
GENERATE_SECONDS = 600  # the TypeScript client: openapi-typescript, then tsc, on a busy machine


@dataclass
class Live:
    url: str
    env: dict[str, str]
    cli: Callable[..., dict]

    def new_key(self, name: str) -> str:
        """The API key of a new workspace: each client's tests have their own tables."""
        workspace = self.cli("workspaces", "create", "--name", name)
        return self.cli("api-keys", "create", "--workspace", workspace["id"])["key"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def live(tmp_path_factory) -> Live:
    folder = tmp_path_factory.mktemp("sdk-server")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {key: value for key, value in os.environ.items() if not key.startswith("PATCHBAY_")}
    env |= {
        "PATCHBAY_DATA_DIR": str(folder / "data"),
        "PATCHBAY_SECRET_KEY": "sdk-test-secret",
        "PATCHBAY_PORT": str(port),
        "PATCHBAY_WORKERS": "0",
        "PATCHBAY_SCHEDULER": "false",
        "PATCHBAY_LOG_LEVEL": "WARNING",
    }

    def cli(*args: str) -> dict:
        result = subprocess.run([PATCHBAY, *args, "--json"], env=env, capture_output=True, text=True, timeout=120, cwd=folder)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    subprocess.run([PATCHBAY, "db", "upgrade"], env=env, check=True, capture_output=True, timeout=120, cwd=folder)
    log = (folder / "serve.log").open("w")
    server = subprocess.Popen([PATCHBAY, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=folder)
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            assert server.poll() is None, (folder / "serve.log").read_text()
            try:
                with urllib.request.urlopen(f"{url}/health/ready", timeout=5):
                    break
            except (urllib.error.URLError, OSError):
                assert time.monotonic() < deadline, f"patchbay serve not ready within {START_SECONDS} s"
                time.sleep(0.2)
        yield Live(url=url, env=env, cli=cli)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def generate(*args: str) -> str:
    """``sdks/generate ARGS`` with this Python; its output."""
    result = subprocess.run([sys.executable, str(GENERATE), *args], capture_output=True, text=True, timeout=GENERATE_SECONDS)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def api_key(live, request) -> str:
    return live.new_key(request.module.__name__.rpartition(".")[2])
