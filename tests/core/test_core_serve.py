"""``patchbay serve`` as a user starts it: the URLs it advertises follow its flags, and a start-up
failure is one line naming the problem."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # patchbay serve processes of their own


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _patchbay() -> str:
    return str(Path(sys.executable).with_name("patchbay"))


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PATCHBAY_DATA_DIR": str(tmp_path / "data"),
        "PATCHBAY_SECRET_KEY": "serve-test-secret",
        "PATCHBAY_WORKERS": "0",
        "PATCHBAY_SCHEDULER": "false",
        "PATCHBAY_LOG_LEVEL": "WARNING",
    }
    for name in ("PATCHBAY_BASE_URL", "PATCHBAY_ISSUER", "PATCHBAY_PORT", "PATCHBAY_DATABASE_URL", "PATCHBAY_CONFIG"):
        env.pop(name, None)
    return env


def _get_json(url: str, deadline: float) -> dict:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return json.load(response)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_serve_port_flag_moves_the_advertised_urls_and_the_issuer(tmp_path):
    port = _free_port()
    log = tmp_path / "serve.log"
    process = subprocess.Popen([_patchbay(), "serve", "--port", str(port)], env=_env(tmp_path), stdout=log.open("w"), stderr=subprocess.STDOUT)
    try:
        discovery = _get_json(f"http://127.0.0.1:{port}/.well-known/openid-configuration", time.monotonic() + 60)
        assert discovery["issuer"] == f"http://127.0.0.1:{port}"
        assert discovery["token_endpoint"].startswith(f"http://127.0.0.1:{port}/")
    finally:
        process.terminate()
        process.wait(timeout=30)
    printed = log.read_text()
    assert f"connect API:       http://127.0.0.1:{port}/connect/v1" in printed
    assert ":8080" not in printed


def test_a_taken_port_is_one_line_not_a_traceback(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([_patchbay(), "serve", "--port", str(port)], env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert f"cannot listen on 127.0.0.1:{port}" in line


def test_serve_with_an_unknown_provider_key_stops_with_one_line(tmp_path):
    config = tmp_path / "patchbay.toml"
    config.write_text("[providers.stripe]\nbogus_key = 1\n")
    result = subprocess.run([_patchbay(), "serve", "--config", str(config)], env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stderr.strip().splitlines()[-1] == "Error: [providers.stripe]: unknown key(s) bogus_key"
