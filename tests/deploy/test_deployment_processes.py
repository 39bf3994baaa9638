"""compose.yaml's deployment as local processes, where no Docker engine is needed: each patchbay
service's command and environment, read from the file, with the container host names replaced by
this machine's PostgreSQL and Redis. The migration runs to its end, then two ``serve`` and a
``worker`` start, and the deployment does what tests/deploy/scenario.py asks of it."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.deploy import scenario
from tests.deploy.scenario import interpolate

ROOT = Path(__file__).resolve().parents[2]
PATCHBAY = str(Path(sys.executable).with_name("patchbay"))
REDIS_URL = "redis://127.0.0.1:6379/9"
START_SECONDS = 240  # three processes starting at once on a busy 2-core machine


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _redis_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=2):
            return True
    except OSError:
        return False


def _ready(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, f"exited with {process.returncode}"
        try:
            with urllib.request.urlopen(f"{url}/health/ready", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"{url} not ready within {START_SECONDS} s")


@pytest.fixture
def deployment(pg_url, tmp_path):
    if not _redis_answers():
        pytest.skip("Redis does not answer on 127.0.0.1:6379")
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    ports = {"serve-1": _free_port(), "serve-2": _free_port()}
    base_url = f"http://127.0.0.1:{ports['serve-1']}"
    host = {"PATCHBAY_SECRET_KEY": secrets.token_urlsafe(32), "PATCHBAY_BASE_URL": base_url}
    clean = {key: value for key, value in os.environ.items() if not key.startswith("PATCHBAY_")}

    def environment(name: str) -> dict[str, str]:
        environ = {key: interpolate(str(value), host) for key, value in services[name]["environment"].items()}
        assert environ["PATCHBAY_DATABASE_URL"].startswith("postgresql+asyncpg://") and environ["PATCHBAY_REDIS_URL"].startswith("redis://redis:")
        # the containers' names for PostgreSQL and Redis, and their shared volume, as this machine has them
        environ |= {"PATCHBAY_DATABASE_URL": pg_url, "PATCHBAY_REDIS_URL": REDIS_URL, "PATCHBAY_DATA_DIR": str(tmp_path / "data")}
        if name in ports:  # the image's listening address; compose maps each container's 8080 to its own host port
            environ |= {"PATCHBAY_HOST": "127.0.0.1", "PATCHBAY_PORT": str(ports[name])}
        return {**clean, **environ}

    migrate = subprocess.run([PATCHBAY, *services["migrate"]["command"]], env=environment("migrate"), capture_output=True, text=True, timeout=120)
    assert migrate.returncode == 0 and "up to date" in migrate.stdout, migrate.stderr
    processes = {
        name: subprocess.Popen(
            [PATCHBAY, *services[name]["command"]], env=environment(name), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=tmp_path
        )
        for name in ("serve-1", "serve-2", "worker")
    }
    try:
        urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
        for name, url in urls.items():
            _ready(url, processes[name])
        assert processes["worker"].stdout.readline().strip() == "patchbay worker running"

        def cli(*args: str):
            result = subprocess.run([PATCHBAY, *args, "--json"], env=environment("serve-1"), capture_output=True, text=True, timeout=120, cwd=tmp_path)
            assert result.returncode == 0, result.stderr
            return json.loads(result.stdout)

        yield {"urls": urls, "cli": cli, "base_url": base_url}
    finally:
        for process in processes.values():
            process.send_signal(signal.SIGTERM)
        for process in processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.mark.slow  # three patchbay processes and a migration, each a process of its own
@pytest.mark.timeout(600)
def test_the_compose_deployment_as_processes(deployment):
    scenario.check_one_database_and_secret(deployment["urls"], deployment["cli"], deployment["base_url"])
    scenario.check_the_worker_runs_jobs(deployment["urls"], deployment["cli"])
