"""The image builds from the repository and compose.yaml brings up a working two-node deployment:
PostgreSQL, Redis, the migration, two ``serve`` and a ``worker``, checked by tests/deploy/scenario.py
(an API key made with the CLI in one web container works on the other; a job is run by the worker)
and as an unprivileged user. Skips, saying why, where no Docker engine answers."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.deploy import scenario

ROOT = Path(__file__).resolve().parents[2]
UP_SECONDS = 900  # the first build downloads the base images and every dependency

pytestmark = [pytest.mark.slow, pytest.mark.timeout(UP_SECONDS + 300)]  # builds an image and runs six containers


def _docker_missing() -> str | None:
    """Why the deployment cannot be brought up here, or None."""
    docker = shutil.which("docker")
    if docker is None:
        return "no docker client on PATH"
    info = subprocess.run([docker, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=60)
    if info.returncode != 0:
        said = (info.stderr or info.stdout).strip().splitlines() or ["no output"]
        return f"no Docker engine answers (`docker info`: {said[-1]})"
    compose = subprocess.run([docker, "compose", "version"], capture_output=True, text=True, timeout=60)
    if compose.returncode != 0:
        return f"the docker compose plugin is missing (`docker compose version`: {compose.stderr.strip()[:200]})"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def deployment():
    reason = _docker_missing()
    if reason:
        pytest.skip(reason)
    project = f"patchbay-test-{uuid.uuid4().hex[:8]}"
    ports = {"SERVE_1_PORT": str(_free_port()), "SERVE_2_PORT": str(_free_port())}
    base_url = f"http://127.0.0.1:{ports['SERVE_1_PORT']}"
    environ = {
        **{key: value for key, value in os.environ.items() if not key.startswith("PATCHBAY_")},
        **ports,
        "PATCHBAY_SECRET_KEY": secrets.token_urlsafe(32),
        "PATCHBAY_BASE_URL": base_url,
        "POSTGRES_PASSWORD": secrets.token_urlsafe(16),
    }
    compose = ["docker", "compose", "--project-name", project, "--file", str(ROOT / "compose.yaml")]

    def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([*compose, *args], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=timeout)

    def cli(*args: str):
        result = run("exec", "-T", "serve-1", "patchbay", *args, "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    try:
        up = run("up", "--detach", "--build", "--wait", "--wait-timeout", str(UP_SECONDS), timeout=UP_SECONDS + 60)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:] + run("logs", "--no-color").stdout[-5000:]
        urls = {name: f"http://127.0.0.1:{ports[variable]}" for name, variable in (("serve-1", "SERVE_1_PORT"), ("serve-2", "SERVE_2_PORT"))}
        yield {"run": run, "cli": cli, "urls": urls, "base_url": base_url}
    finally:
        run("down", "--volumes", "--remove-orphans", "--timeout", "20", timeout=300)


def test_two_web_processes_share_one_database_and_secret(deployment):
    scenario.check_one_database_and_secret(deployment["urls"], deployment["cli"], deployment["base_url"])


def test_the_worker_runs_the_jobs(deployment):
    logs = deployment["run"]("logs", "--no-color", "worker").stdout
    assert "patchbay worker running" in logs, logs[-2000:]
    scenario.check_the_worker_runs_jobs(deployment["urls"], deployment["cli"])


def test_the_containers_run_as_an_unprivileged_user(deployment):
    for name in ("serve-1", "serve-2", "worker"):
        result = deployment["run"]("exec", "-T", name, "id", "-u")
        assert result.returncode == 0 and result.stdout.strip() not in ("", "0"), result.stdout + result.stderr


def test_the_migration_ran_once_and_exited(deployment):
    result = deployment["run"]("ps", "--all", "--format", "json", "migrate")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    states = [(item["State"], item["ExitCode"]) for item in (lines[0] if lines and isinstance(lines[0], list) else lines)]
    assert states == [("exited", 0)], states
