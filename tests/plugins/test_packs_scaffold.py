"""The pack author's path end to end: ``patchbay packs new acme``, pip-install it beside patchbay,
run its generated tests (the acceptance suite among them), serve it and call its action."""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys

import aiohttp
import pytest

from patchbay.testing import FakeProviderAPI

pytestmark = pytest.mark.slow  # builds, installs and tests a pack in processes of their own

# Run from a scratch folder: ``python -m`` puts the working directory first on sys.path, and the
# repository's own ``patchbay/`` folder would shadow the installed package there.
PATCHBAY = [sys.executable, "-m", "patchbay.cli"]


def _scaffold_and_install(tmp_path, *extras: str):
    """``patchbay packs new acme --with EXTRAS``, pip-installed into its own site folder; (pack folder, environment)."""
    pack = tmp_path / "acme"
    subprocess.run(
        [*PATCHBAY, "packs", "new", "acme", "--auth", "api_key", "--with", ",".join(extras), "--dir", str(pack)], cwd=tmp_path, check=True, capture_output=True
    )
    site = tmp_path / "site"
    # the test extra brings a setuptools that builds wheels by itself, so no build environment is fetched
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site), str(pack)], check=True)
    env = {**os.environ, "PYTHONPATH": str(site), "PATCHBAY_DATA_DIR": str(tmp_path / "data"), "PATCHBAY_SECRET_KEY": "k"}
    env.pop("PATCHBAY_DATABASE_URL", None)
    return pack, env


def _run_generated_tests(pack, env) -> str:
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=pack, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture
def installed_acme(tmp_path):
    return _scaffold_and_install(tmp_path, "action")


def test_scaffold_writes_every_part(tmp_path):
    pack = tmp_path / "widget"
    subprocess.run([*PATCHBAY, "packs", "new", "widget", "--auth", "oauth2", "--dir", str(pack)], cwd=tmp_path, check=True, capture_output=True)
    assert '[project.entry-points."patchbay.providers"]\nwidget = "patchbay_widget"' in (pack / "pyproject.toml").read_text()
    assert 'auth_mode="oauth2"' in (pack / "patchbay_widget" / "__init__.py").read_text()
    assert 'pack_acceptance("widget")' in (pack / "tests" / "test_patchbay_widget.py").read_text()
    assert (pack / "README.md").exists() and "pytest" in (pack / ".github" / "workflows" / "test.yml").read_text()
    refused = subprocess.run(
        [*PATCHBAY, "packs", "new", "widget", "--with", "telepathy", "--dir", str(tmp_path / "x")], cwd=tmp_path, capture_output=True, text=True
    )
    assert refused.returncode == 2 and "telepathy (known: action, poll, webhook, crm)" in refused.stderr


def test_generated_tests_pass(installed_acme):
    output = _run_generated_tests(*installed_acme)
    # the acceptance suite (its action-schema check among it; no poll trigger, no webhook: 2 skipped)
    # and the generated test of the action through the API
    assert "7 passed, 2 skipped" in output, output


def test_every_extra_has_passing_generated_tests(tmp_path):
    pack, env = _scaffold_and_install(tmp_path, "action", "poll", "webhook", "crm")
    test_module = (pack / "tests" / "test_patchbay_acme.py").read_text()
    assert 'pack_acceptance("acme", webhook_signer=sign_webhook)' in test_module
    output = _run_generated_tests(pack, env)
    # the whole acceptance suite, none skipped (8), then the action's, the poll trigger's, the
    # webhook handler's and the CRM mapper's (2) own tests
    assert "13 passed" in output and "skipped" not in output, output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_served_pack_runs_its_action_through_the_api(installed_acme, tmp_path):
    _, env = installed_acme
    fake = await FakeProviderAPI({("GET", "/me"): (200, {"id": "u-1"})}).start()
    config = tmp_path / "patchbay.toml"
    config.write_text(f'allow_insecure_targets = true\n\n[providers.acme]\napi_base_url = "{fake.url}"\n')
    env = {**env, "PATCHBAY_CONFIG": str(config)}

    def cli(*args: str) -> dict:
        return json.loads(subprocess.run([*PATCHBAY, *args, "--json"], env=env, cwd=tmp_path, check=True, capture_output=True, text=True).stdout)

    workspace = cli("workspaces", "create", "--name", "T")
    headers = {"x-api-key": cli("api-keys", "create", "--workspace", workspace["id"])["key"]}
    port = _free_port()
    server = subprocess.Popen(
        [*PATCHBAY, "serve", "--port", str(port), "--no-scheduler"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}/connect/v1"
    try:
        async with aiohttp.ClientSession() as http:
            await _wait_up(http, f"{base}/providers/acme", headers)
            async with http.post(f"{base}/providers/acme/connect", json={"credentials": {"apiKey": "acme-key"}}, headers=headers) as response:
                assert response.status in (200, 201), await response.text()
            async with http.post(f"{base}/providers/acme/actions/get_me", json={}, headers=headers) as response:
                assert response.status == 201, await response.text()
                assert await response.json() == {"success": True, "data": {"id": "u-1"}}
        assert fake.requests[-1].path == "/me" and fake.requests[-1].headers["x-api-key"] == "acme-key"
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=20)
        await fake.close()


async def _wait_up(http: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> None:
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        try:
            async with http.get(url, headers=headers) as response:
                assert response.status == 200, await response.text()
                return
        except aiohttp.ClientConnectionError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.2)
