"""``patchbay serve`` as an operator starts it: the console's URL is the first thing printed after
the server's own, the console's client exists at start, and a person made with
``patchbay users create --operator`` signs in and sees every workspace."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from aiohttp import ClientSession, CookieJar

from tests.console.conftest import Person, http_sign_in
from tests.core.test_core_serve import _env, _free_port, _patchbay

pytestmark = pytest.mark.slow  # a patchbay serve process of its own


def _cli(env: dict[str, str], *args: str) -> dict:
    result = subprocess.run([_patchbay(), *args, "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _wait_for(url: str, deadline: float) -> None:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # the server answers
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


async def test_serve_prints_the_console_and_an_operator_signs_in(tmp_path):
    env = _env(tmp_path)
    first = _cli(env, "workspaces", "create", "--name", "First")
    second = _cli(env, "workspaces", "create", "--name", "Second")
    operator = _cli(env, "users", "create", "--email", "op@example.com", "--password", "operator-password", "--operator")
    assert operator["operator"] is True and operator["workspaceId"] is None
    assert _cli(env, "users", "show", "op@example.com")["operator"] is True
    assert _cli(env, "users", "create", "--email", "plain@example.com", "--password", "plain-password")["operator"] is False

    port = _free_port()
    log = tmp_path / "serve.log"
    process = subprocess.Popen([_patchbay(), "serve", "--port", str(port)], env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(f"{base}/livez", time.monotonic() + 60)
        async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as http:
            landed = await http_sign_in(http, base, Person("op@example.com", "operator-password", operator["id"], "", ""))
            async with http.get(f"{base}/console/w/{second['id']}/") as response:
                page = await response.text()
        assert landed.startswith(f"{base}/console/w/")
        assert response.status == 200 and "Second" in page and first["id"] in page, "the switcher lists every workspace"
    finally:
        process.terminate()
        process.wait(timeout=30)
    lines = log.read_text().splitlines()
    listening = next(i for i, line in enumerate(lines) if line.startswith("patchbay is listening on"))
    assert lines[listening + 1] == f"  console:           {base}/console/"
