"""Without a payment provider the operator sets the plan from the CLI."""

import json

from click.testing import CliRunner

from patchbay.cli.main import cli


def test_set_plan(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHBAY_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PATCHBAY_SECRET_KEY", "cli-test-secret")
    monkeypatch.delenv("PATCHBAY_DATABASE_URL", raising=False)
    monkeypatch.delenv("PATCHBAY_CONFIG", raising=False)
    runner = CliRunner()
    workspace = json.loads(runner.invoke(cli, ["workspaces", "create", "--name", "Acme", "--json"], catch_exceptions=False).output)
    result = runner.invoke(cli, ["workspaces", "set-plan", "--workspace", workspace["id"], "--plan", "professional", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"id": workspace["id"], "name": "Acme", "plan": "professional"}
    missing = runner.invoke(cli, ["workspaces", "set-plan", "--workspace", "nope", "--plan", "starter"])
    assert missing.exit_code != 0 and "no workspace" in missing.output
    assert runner.invoke(cli, ["workspaces", "set-plan", "--workspace", workspace["id"], "--plan", "gold"]).exit_code != 0
