"""The operator's CLI from any folder: global ``--data-dir``/``--config``, no stray data folder, and
one-line errors for start-up problems."""

from __future__ import annotations

import json

from click.testing import CliRunner
from sqlalchemy import create_engine, text

from patchbay.cli.main import cli


def invoke(monkeypatch, cwd, *args: str):
    monkeypatch.chdir(cwd)
    for name in ("PATCHBAY_DATA_DIR", "PATCHBAY_DATABASE_URL", "PATCHBAY_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATCHBAY_SECRET_KEY", "cli-global-secret")
    return CliRunner().invoke(cli, list(args))


def workspace_names(data_dir) -> list[str]:
    engine = create_engine(f"sqlite:///{data_dir / 'patchbay.db'}")
    with engine.connect() as connection:
        return [row[0] for row in connection.execute(text("SELECT name FROM workspaces"))]


def test_global_data_dir_reaches_every_command(tmp_path, monkeypatch):
    data = tmp_path / "install" / "data"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert invoke(monkeypatch, elsewhere, "--data-dir", str(data), "db", "upgrade").exit_code == 0
    created = invoke(monkeypatch, elsewhere, "--data-dir", str(data), "workspaces", "create", "--name", "Global", "--json")
    assert created.exit_code == 0, created.output
    assert json.loads(created.output)["name"] == "Global"
    assert workspace_names(data) == ["Global"]
    assert not (elsewhere / "patchbay-data").exists()


def test_global_config_names_the_data(tmp_path, monkeypatch):
    data = tmp_path / "configured"
    config = tmp_path / "patchbay.toml"
    config.write_text(f'data_dir = "{data}"\n')
    assert invoke(monkeypatch, tmp_path, "--config", str(config), "db", "upgrade").exit_code == 0
    assert invoke(monkeypatch, tmp_path, "--config", str(config), "workspaces", "create", "--name", "From file").exit_code == 0
    assert workspace_names(data) == ["From file"]


def test_an_admin_command_in_a_folder_without_data_creates_nothing(tmp_path, monkeypatch):
    result = invoke(monkeypatch, tmp_path, "workspaces", "create", "--name", "Stray")
    assert result.exit_code != 0
    assert "no patchbay data in" in result.output and "--data-dir" in result.output
    assert not (tmp_path / "patchbay-data").exists()


def test_an_unknown_provider_override_key_is_one_line(tmp_path, monkeypatch):
    config = tmp_path / "patchbay.toml"
    config.write_text("[providers.stripe]\nbogus_key = 1\n")
    result = invoke(monkeypatch, tmp_path, "--config", str(config), "providers", "list")
    assert result.exit_code == 1
    assert result.output.strip() == "Error: [providers.stripe]: unknown key(s) bogus_key"


def test_serve_host_and_port_flags_feed_the_urls_unless_base_url_and_issuer_are_set(monkeypatch):
    from patchbay.cli.runtime import settings_from

    for name in ("PATCHBAY_BASE_URL", "PATCHBAY_ISSUER", "PATCHBAY_HOST", "PATCHBAY_PORT", "PATCHBAY_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    settings = settings_from({"host": "10.1.2.3", "port": 19081})
    assert (settings.public_base_url, settings.resolved_issuer) == ("http://10.1.2.3:19081", "http://10.1.2.3:19081")
    assert settings_from({"host": "0.0.0.0", "port": 19081}).public_base_url == "http://127.0.0.1:19081"  # all interfaces: loopback works
    monkeypatch.setenv("PATCHBAY_BASE_URL", "https://connect.example.com")
    monkeypatch.setenv("PATCHBAY_ISSUER", "https://id.example.com")
    chosen = settings_from({"host": "10.1.2.3", "port": 19081})
    assert (chosen.public_base_url, chosen.resolved_issuer) == ("https://connect.example.com", "https://id.example.com")
