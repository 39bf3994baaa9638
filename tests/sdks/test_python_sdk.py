"""The Python client generated from a running server's /openapi.json (sdks/generate) drives that
server: the documented example runs as written, and the client's answers are the document's models."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sdks.conftest import GENERATE_SECONDS, ROOT, generate

pytestmark = [pytest.mark.slow, pytest.mark.timeout(GENERATE_SECONDS + 300)]  # a server process; generates a client with openapi-python-client


@pytest.fixture(scope="module")
def client_folder(live, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("python-sdk")
    generate("--document", f"{live.url}/openapi.json", "--out", str(out), "python")
    assert json.loads((out / "openapi.json").read_text())["servers"] == [{"url": live.url}]
    return out / "python"


@pytest.fixture
def patchbay_client(client_folder):
    sys.path.insert(0, str(client_folder))
    try:
        yield importlib.import_module("patchbay_client")
    finally:
        sys.path.remove(str(client_folder))
        for name in [name for name in sys.modules if name == "patchbay_client" or name.startswith("patchbay_client.")]:
            del sys.modules[name]


def test_the_example_runs_as_written(live, api_key, client_folder):
    env = {**live.env, "PATCHBAY_URL": live.url, "PATCHBAY_API_KEY": api_key, "PYTHONPATH": str(client_folder)}
    result = subprocess.run([sys.executable, str(ROOT / "sdks" / "python" / "example.py")], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed == {"slug": printed["slug"], "columns": ["email", "plan"], "total": 1, "first": {"email": "ada@example.com", "plan": "pro"}}
    assert printed["slug"].startswith("customers")


def test_typed_answers(live, api_key, patchbay_client):
    from patchbay_client.api.providers import get_get_provider_route
    from patchbay_client.api.tables import get_list_tables, post_create_table
    from patchbay_client.models import CreateTableDto, Error, ProviderDetail, TableOut

    client = patchbay_client.AuthenticatedClient(base_url=live.url, token=api_key, prefix="", auth_header_name="x-api-key")
    with client:
        created = post_create_table.sync(client=client, body=CreateTableDto(name="Typed"))
        assert isinstance(created, TableOut) and created.slug == "typed" and created.columns == []
        tables = get_list_tables.sync(client=client)
        assert all(isinstance(table, TableOut) for table in tables) and "typed" in [table.slug for table in tables]
        github = get_get_provider_route.sync("github", client=client)
        assert isinstance(github, ProviderDetail) and github.name == "github"
        # a 4XX answer is the document's Error model
        again = post_create_table.sync(client=client, body=CreateTableDto(name="Typed", slug="typed"))
        assert isinstance(again, Error) and again.status_code == 409, again
    anonymous = patchbay_client.Client(base_url=live.url)
    with anonymous:
        refused = get_list_tables.sync_detailed(client=anonymous)
        assert refused.status_code == 401 and isinstance(refused.parsed, Error)


def test_the_client_installs_as_a_package(client_folder, tmp_path):
    """``pip install <out>/python`` (the generated setup.py), into a folder of its own."""
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site), str(client_folder)], check=True, timeout=300
    )
    assert (site / "patchbay_client" / "py.typed").exists()
    found = subprocess.run(
        [sys.executable, "-c", "import patchbay_client; print(patchbay_client.__file__)"],
        env={**os.environ, "PYTHONPATH": str(site)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert found.returncode == 0 and found.stdout.startswith(str(site)), found.stderr
