"""Attacks on ``/metrics``: it reads figures across every tenant and runs six aggregate queries per
scrape, so an outsider must not read it (nor make the server run them): without a configured token
the main port does not serve it; with one, only ``Authorization: Bearer <token>`` opens it; the
separate ``[metrics] listen`` address of ``patchbay serve`` answers without a token."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from patchbay.core.settings import MetricsSettings, SettingsError, load_settings
from patchbay.core.testing import create_workspace_with_key

TOKEN = "scrape-token-0123456789"


async def _refused(client, status: int, headers: dict[str, str]) -> None:
    response = await client.get("/metrics", headers=headers)
    body = await response.json()
    assert response.status == status and set(body) == {"statusCode", "message"}, (headers, body)
    assert "patchbay_" not in await response.text()


async def test_without_a_token_the_main_port_does_not_serve_metrics(aiohttp_client, make_app):
    client = await aiohttp_client(make_app())
    workspace = await create_workspace_with_key(client.server.app)

    for headers in ({}, workspace["headers"], {"Authorization": f"Bearer {workspace['api_key']}"}, {"Authorization": "Bearer "}):
        await _refused(client, 404, headers)


@pytest.fixture
async def guarded(aiohttp_client, make_app, database_url):
    client = await aiohttp_client(make_app(database_url=database_url, metrics=MetricsSettings(token=TOKEN)))
    client.workspace = await create_workspace_with_key(client.server.app)
    return client


async def test_only_the_metrics_token_opens_metrics(guarded):
    api_key = guarded.workspace["api_key"]
    refused = [
        {},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
        {"Authorization": "Bearer é"},  # not ASCII: refused, not a 500
        {"x-api-key": api_key},
        {"Authorization": f"Bearer {api_key}"},
    ]
    for headers in refused:
        await _refused(guarded, 401, headers)

    response = await guarded.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})

    assert response.status == 200 and response.content_type == "text/plain"
    assert "patchbay_http_requests_total" in await response.text()


# -- the separate listener of `patchbay serve` ----------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _status(url: str, deadline: float) -> tuple[int, str]:
    """The status and body of ``url``, waiting (bounded) for the server to listen."""
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _env(tmp_path: Path, listen: str) -> dict[str, str]:
    env = {
        **os.environ,
        "PATCHBAY_DATA_DIR": str(tmp_path / "data"),
        "PATCHBAY_SECRET_KEY": "metrics-test-secret",
        "PATCHBAY_WORKERS": "0",
        "PATCHBAY_SCHEDULER": "false",
        "PATCHBAY_LOG_LEVEL": "WARNING",
        "PATCHBAY_METRICS_LISTEN": listen,
    }
    for name in ("PATCHBAY_BASE_URL", "PATCHBAY_ISSUER", "PATCHBAY_PORT", "PATCHBAY_DATABASE_URL", "PATCHBAY_CONFIG", "PATCHBAY_METRICS_TOKEN"):
        env.pop(name, None)
    return env


PATCHBAY = str(Path(sys.executable).with_name("patchbay"))


@pytest.mark.slow  # about 3 s (setup and call)
def test_serve_answers_metrics_on_its_own_listener_without_a_token(tmp_path):
    port, metrics_port = _free_port(), _free_port()
    log = tmp_path / "serve.log"
    process = subprocess.Popen(
        [PATCHBAY, "serve", "--port", str(port)], env=_env(tmp_path, f"127.0.0.1:{metrics_port}"), stdout=log.open("w"), stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 60
        assert _status(f"http://127.0.0.1:{port}/livez", deadline)[0] == 200
        status, text = _status(f"http://127.0.0.1:{metrics_port}/metrics", deadline)
        assert status == 200 and "patchbay_http_requests_total" in text, text
        assert _status(f"http://127.0.0.1:{port}/metrics", deadline)[0] == 404  # the main port still does not serve it
        assert _status(f"http://127.0.0.1:{metrics_port}/connect/v1/providers", deadline)[0] == 404  # the listener serves metrics only
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert f"metrics:           http://127.0.0.1:{metrics_port}/metrics" in log.read_text()


@pytest.mark.slow  # about 2 s (setup and call)
def test_a_listen_address_that_is_taken_is_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        result = subprocess.run([PATCHBAY, "serve", "--port", str(_free_port())], env=_env(tmp_path, address), capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
    assert result.stderr.strip().splitlines()[-1].startswith(f"Error: PATCHBAY_METRICS_LISTEN: cannot listen on {address}")


@pytest.mark.parametrize("malformed", ["9100", "host:", ":9100", "host:99999", "host:port"])
def test_a_malformed_listen_address_is_refused_at_start(tmp_path, malformed):
    with pytest.raises(SettingsError, match=f"PATCHBAY_METRICS_LISTEN: {re.escape(repr(malformed))} is not host:port"):
        load_settings({}, _env(tmp_path, malformed))


async def test_a_bearer_header_that_is_not_ascii_is_refused_not_an_error(aiohttp_client, make_app):
    """The operator's bearer routes share one check: ``/api/cron/*`` refuses it too."""
    client = await aiohttp_client(make_app(cron_secret="cron-secret", metrics=MetricsSettings(token=TOKEN)))
    for path in ("/metrics", "/api/cron/token-refresh"):
        response = await client.get(path, headers={"Authorization": "Bearer é"})
        assert response.status == 401 and set(await response.json()) == {"statusCode", "message"}, path
