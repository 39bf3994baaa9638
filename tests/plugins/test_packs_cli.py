"""``patchbay packs list`` and ``patchbay packs check`` over really installed distributions."""

import json
from importlib.metadata import version

import pytest
from click.testing import CliRunner

from patchbay.cli.main import cli

GOOD = """
    from patchbay import Provider, hookimpl

    @hookimpl
    def register_providers():
        return [Provider(name="zorp", display_name="Zorp", category="crm", auth_mode="api_key", api_base_url="https://api.zorp.test")]
"""
BROKEN = """
    raise ImportError("no module named zorp_sdk")
"""


@pytest.fixture
def packs(install, monkeypatch, tmp_path):
    install("zorp-pack", {"patchbay.providers": {"zorp": "zorp_pack_module"}}, {"zorp_pack_module": GOOD})
    install("zorp-broken", {"patchbay.providers": {"zorp_broken": "zorp_broken_module"}}, {"zorp_broken_module": BROKEN})
    monkeypatch.setenv("PATCHBAY_DATA_DIR", str(tmp_path / "data"))

    def run(*args: str):
        return CliRunner().invoke(cli, ["packs", *args])

    return run


def test_list_shows_distribution_version_providers_hooks_and_errors(packs, monkeypatch):
    result = packs("list", "--json")
    assert result.exit_code == 0, result.output
    by_name = {item["name"]: item for item in json.loads(result.stdout)}
    assert by_name["zorp"] == {
        "name": "zorp",
        "distribution": "zorp-pack",
        "version": "1.0",
        "status": "loaded",
        "providers": ["zorp"],
        "hooks": ["register_providers"],
        "error": None,
    }
    assert by_name["zorp_broken"]["status"] == "error" and "zorp_sdk" in by_name["zorp_broken"]["error"]
    assert by_name["zorp_broken"]["distribution"] == "zorp-broken"
    assert (
        by_name["stripe_billing"]["hooks"] == ["register_payment_providers", "register_settings"]
        and by_name["stripe_billing"]["distribution"] == "patchbay-server"
    )
    assert by_name["salesforce"]["providers"] == ["salesforce", "salesforce-sandbox"]
    assert by_name["github"] == {
        "name": "github",
        "distribution": "patchbay-server",
        "version": version("patchbay-server"),
        "status": "loaded",
        "providers": ["github"],
        "hooks": ["register_providers"],
        "error": None,
    }

    monkeypatch.setenv("PATCHBAY_PLUGINS_DISABLE", "zorp")
    by_name = {item["name"]: item for item in json.loads(packs("list", "--json").stdout)}
    assert by_name["zorp"]["status"] == "disabled" and by_name["zorp"]["providers"] == []


@pytest.mark.slow  # CLI processes over every provider
def test_check_passes_a_good_pack_and_names_a_broken_or_unknown_one(packs):
    good = packs("check", "zorp")
    assert good.exit_code == 0 and good.stdout.startswith("zorp: loaded, 1 provider(s)")
    broken = packs("check", "zorp_broken")
    assert broken.exit_code == 1 and "plugin 'zorp_broken' (zorp-broken) is broken" in broken.output and "zorp_sdk" in broken.output
    unknown = packs("check", "zorpp")
    assert unknown.exit_code == 1 and "no installed plugin named 'zorpp'" in unknown.output


@pytest.mark.slow  # CLI processes over every provider
def test_list_summarises_the_data_only_providers_in_one_row_unless_asked_for_every_provider(packs, monkeypatch):
    """The default text is one row per pack or plugin, the built-in data-only providers (one plugin
    each) counted in one row; ``--providers`` lists every plugin and provider; --json is unchanged."""
    data = json.loads(packs("list", "--json").stdout)
    data_only = [item["name"] for item in data if item["distribution"] == "patchbay-server" and item["hooks"] == ["register_providers"]]
    assert "github" in data_only and len(data_only) > 800

    lines = packs("list").stdout.splitlines()
    summary = [line for line in lines if line.startswith("(data-only providers)")]
    assert summary == [
        f"{'(data-only providers)':<24} patchbay-server {version('patchbay-server')} [loaded] {len(data_only)} built-in data-only providers, one plugin each (--providers lists them)"
    ]
    rows = {line.split()[0]: line for line in lines if not line.startswith(" ")}
    assert "github" not in rows and len(lines) < 60
    assert rows["zorp"] == f"{'zorp':<24} zorp-pack 1.0 [loaded] zorp"
    assert rows["salesforce"].endswith("[loaded] salesforce, salesforce-sandbox")
    assert rows["stripe_billing"].endswith("[loaded] hooks: register_payment_providers, register_settings")
    assert rows["zorp_broken"].startswith(f"{'zorp_broken':<24} zorp-broken") and "[error]" in rows["zorp_broken"]
    assert "zorp_sdk" in lines[lines.index(rows["zorp_broken"]) + 1]

    every = packs("list", "--providers").stdout.splitlines()
    listed = {line.split()[0] for line in every if not line.startswith(" ")}
    assert listed == {item["name"] for item in data} and not any(line.startswith("(data-only") for line in every)

    monkeypatch.setenv("PATCHBAY_PLUGINS_DISABLE", "github")
    lines = packs("list").stdout.splitlines()
    assert f"[loaded] {len(data_only) - 1} built-in data-only providers" in lines[0]
    assert any(line.startswith("github ") and "[disabled]" in line for line in lines)
