"""A scaffolded pack depends on patchbay's own distribution (``patchbay-server``), not on ``patchbay``,
which on PyPI is an unrelated project: a pack's CI on a clean runner must install the right one."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchbay.cli.main import cli
from patchbay.cli.packs import DISTRIBUTION, scaffold

ROOT = Path(__file__).resolve().parents[2]


def test_the_distribution_is_the_one_installed_and_declared():
    assert DISTRIBUTION == "patchbay-server"
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"] == DISTRIBUTION
    assert DISTRIBUTION in packages_distributions()["patchbay"]


@pytest.mark.parametrize("features", [(), ("action", "poll", "webhook", "crm")])
def test_scaffolded_pack_depends_on_the_distribution(tmp_path, features):
    scaffold("acme", "api_key", features, tmp_path)
    project = tomllib.loads((tmp_path / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == [DISTRIBUTION]
    assert f"`{DISTRIBUTION}`" in (tmp_path / "README.md").read_text()


def test_a_pack_cannot_take_the_distribution_name(tmp_path):
    result = CliRunner().invoke(cli, ["packs", "new", "server", "--dir", str(tmp_path / "pack")])
    assert result.exit_code == 2 and "patchbay-server, patchbay's own" in result.output
    assert not (tmp_path / "pack").exists()


@pytest.mark.slow  # pip resolves the pack in a process of its own
def test_the_dependency_resolves_to_this_installation_offline(tmp_path):
    """pip, with no index at all, finds the pack's dependency satisfied by this installation: it
    installs nothing but the pack (with ``patchbay`` as the dependency, it would look for it)."""
    scaffold("acme", "api_key", (), tmp_path / "acme")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-build-isolation", "--quiet", "--report", "-", str(tmp_path / "acme")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    installs = [item["metadata"]["name"] for item in json.loads(result.stdout)["install"]]
    assert installs == ["patchbay-acme"]
