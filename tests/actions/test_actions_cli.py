"""``patchbay actions list`` and ``actions run`` over the real CLI, on SQLite, with a stored
connection of the declared ``github`` provider aimed at a local fake of its API. The CLI runs in a
thread (it has its own event loop) while the fake answers on the test's."""

from __future__ import annotations

import asyncio
import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchbay.cli.main import cli
from patchbay.core.services import build_services
from patchbay.core.settings import load_settings
from patchbay.core.testing import create_workspace_with_key
from patchbay.testing import add_connection

INPUTS = {"owner": "octo", "repo": "hello", "title": "Bug"}


@pytest.fixture
async def stored(tmp_path, monkeypatch, fake_provider_api):
    """A workspace and its github connection in the data folder the CLI reads, github aimed at the fake."""
    config = tmp_path / "patchbay.toml"
    config.write_text(f'[providers.github]\napi_base_url = "{fake_provider_api.url}"\n')
    for name, value in {
        "PATCHBAY_DATA_DIR": str(tmp_path / "data"),
        "PATCHBAY_SECRET_KEY": "cli-actions-secret",
        "PATCHBAY_ALLOW_INSECURE_TARGETS": "true",
        "PATCHBAY_CONFIG": str(config),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PATCHBAY_DATABASE_URL", raising=False)
    services = build_services(load_settings())
    async with services.running():
        workspace = await create_workspace_with_key(services)
        connection_id = await add_connection(services, workspace["workspace_id"], "github", credentials={"access_token": "gh-token"})
    return {"workspace_id": workspace["workspace_id"], "connection_id": connection_id, "fake": fake_provider_api}


async def run(*args: str, ok: bool = True):
    result = await asyncio.to_thread(CliRunner().invoke, cli, list(args), catch_exceptions=False)
    assert (result.exit_code == 0) == ok, result.output
    return result


async def test_run_calls_the_provider_with_the_stored_credential_and_prints_the_result(stored):
    fake = stored["fake"]
    fake.routes[("POST", "/repos/octo/hello/issues")] = (201, {"id": 7, "number": 42, "title": "Bug"})
    result = await run("actions", "run", "github", "create_issue", "--connection", stored["connection_id"], "--input", json.dumps(INPUTS))
    assert json.loads(result.stdout) == {"id": 7, "number": 42, "title": "Bug"}
    [request] = fake.requests
    assert request.headers["Authorization"] == "Bearer gh-token" and json.loads(request.body) == {"title": "Bug"}
    again = await run(
        "actions",
        "run",
        "github",
        "create_issue",
        "--connection",
        stored["connection_id"],
        "--workspace",
        stored["workspace_id"],
        "--input",
        json.dumps(INPUTS),
        "--json",
    )
    assert json.loads(again.stdout) == {"success": True, "data": {"id": 7, "number": 42, "title": "Bug"}}


async def test_bad_input_prints_the_field_and_calls_nothing(stored):
    result = await run(
        "actions", "run", "github", "create_issue", "--connection", stored["connection_id"], "--input", '{"owner": "octo", "repo": "hello"}', ok=False
    )
    assert result.exit_code == 1 and "inputs.title is required" in result.stderr and "Traceback" not in result.output
    not_json = await run("actions", "run", "github", "create_issue", "--connection", stored["connection_id"], "--input", "{owner", ok=False)
    assert not_json.exit_code == 2 and "--input" in not_json.stderr
    assert stored["fake"].requests == []


@pytest.mark.parametrize(("status", "expected"), [(422, "answered 422"), (404, "answered 404")])
async def test_a_provider_refusal_prints_its_message_and_exits_non_zero(stored, status, expected):
    stored["fake"].routes[("POST", "/repos/octo/hello/issues")] = (status, {"message": "refused here"})
    result = await run("actions", "run", "github", "create_issue", "--connection", stored["connection_id"], "--input", json.dumps(INPUTS), ok=False)
    assert result.exit_code == 1 and expected in result.stderr and "refused here" in result.stderr
    assert result.stdout == ""


@pytest.mark.slow  # about 1 s (setup and call)
async def test_an_unknown_connection_workspace_or_provider_is_refused(stored):
    missing = await run("actions", "run", "github", "create_issue", "--connection", "nope", "--input", json.dumps(INPUTS), ok=False)
    assert "Connection not found" in missing.stderr
    other = await run(
        "actions", "run", "github", "create_issue", "--connection", stored["connection_id"], "--workspace", "another", "--input", json.dumps(INPUTS), ok=False
    )
    assert "Connection not found" in other.stderr
    wrong = await run("actions", "run", "slack", "send_message", "--connection", stored["connection_id"], ok=False)
    assert "the connection is to github, not slack" in wrong.stderr
    unknown = await run("actions", "run", "github", "no_such_action", "--connection", stored["connection_id"], ok=False)
    assert "Action not found: github.no_such_action" in unknown.stderr
    assert stored["fake"].requests == []


REPO = Path(__file__).resolve().parents[2]


async def test_list_shows_titles_and_docs_urls(stored):
    text = (await run("actions", "list", "github")).stdout
    assert "github.create_issue" in text and "Create issue" in text and "https://docs.github.com/en/rest/issues/issues#create-an-issue" in text
    listed = json.loads((await run("actions", "list", "github", "--json")).stdout)
    declared = tomllib.loads((REPO / "providers" / "github" / "actions.toml").read_text())["actions"]
    assert [a["name"] for a in listed] == sorted(action["name"] for action in declared)
    assert all(a["docsUrl"] and a["displayName"] for a in listed)
    everything = json.loads((await run("actions", "list", "--json")).stdout)
    assert {a["provider"] for a in everything} > {"github", "slack"} and len(everything) == len({a["id"] for a in everything})
    assert "Provider not found: nope" in (await run("actions", "list", "nope", ok=False)).stderr
