"""``patchbay db backup`` and ``restore``: a backup restored into an empty database serves the same
data (the API key made before the backup opens the connect API of the restored server)."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from click.testing import CliRunner

from patchbay.cli.main import cli

SECRET = "backup-test-secret"


def _cli(monkeypatch, data_dir, database_url: str | None, *args: str, ok: bool = True):
    monkeypatch.setenv("PATCHBAY_DATA_DIR", str(data_dir))
    monkeypatch.setenv("PATCHBAY_SECRET_KEY", SECRET)
    monkeypatch.delenv("PATCHBAY_CONFIG", raising=False)
    if database_url:
        monkeypatch.setenv("PATCHBAY_DATABASE_URL", database_url)
    else:
        monkeypatch.delenv("PATCHBAY_DATABASE_URL", raising=False)
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert (result.exit_code == 0) == ok, result.output
    return result


def _make_data(monkeypatch, data_dir, url):
    import json

    workspace = json.loads(_cli(monkeypatch, data_dir, url, "workspaces", "create", "--name", "Backed up", "--json").output)
    key = json.loads(_cli(monkeypatch, data_dir, url, "api-keys", "create", "--workspace", workspace["id"], "--json").output)
    return workspace["id"], key["key"]


async def _served(aiohttp_client, make_app, url: str, key: str) -> int:
    client = await aiohttp_client(make_app(database_url=url, secret_key=[SECRET]))
    response = await client.get("/connect/v1/connections", headers={"x-api-key": key})
    return response.status


async def test_sqlite_backup_restores_into_a_new_folder_and_serves(tmp_path, monkeypatch, aiohttp_client, make_app):
    _workspace_id, key = await asyncio.to_thread(_make_data, monkeypatch, tmp_path / "old", None)
    backup = tmp_path / "backups" / "patchbay.sqlite"
    await asyncio.to_thread(_cli, monkeypatch, tmp_path / "old", None, "db", "backup", str(backup))
    assert backup.stat().st_size > 0

    await asyncio.to_thread(_cli, monkeypatch, tmp_path / "new", None, "db", "restore", str(backup))
    restored_url = f"sqlite+aiosqlite:///{tmp_path / 'new' / 'patchbay.db'}"
    assert await _served(aiohttp_client, make_app, restored_url, key) == 200


def test_restore_refuses_a_database_with_data_without_force(tmp_path, monkeypatch):
    _make_data(monkeypatch, tmp_path / "a", None)
    backup = tmp_path / "a.sqlite"
    _cli(monkeypatch, tmp_path / "a", None, "db", "backup", str(backup))
    _make_data(monkeypatch, tmp_path / "b", None)
    refused = _cli(monkeypatch, tmp_path / "b", None, "db", "restore", str(backup), ok=False)
    assert "holds data" in refused.output and "--force" in refused.output
    _cli(monkeypatch, tmp_path / "b", None, "db", "restore", str(backup), "--force")


def test_restore_of_a_file_that_is_not_a_backup_is_refused(tmp_path, monkeypatch):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    refused = _cli(monkeypatch, tmp_path / "c", None, "db", "restore", str(junk), ok=False)
    assert "is not a SQLite backup" in refused.output


@pytest.mark.slow  # pg_dump and restore
async def test_postgresql_backup_restores_into_an_empty_database_and_serves(tmp_path, monkeypatch, aiohttp_client, make_app, pg_url):
    _workspace_id, key = await asyncio.to_thread(_make_data, monkeypatch, tmp_path / "pg", pg_url)
    backup = tmp_path / "pg.dump"
    await asyncio.to_thread(_cli, monkeypatch, tmp_path / "pg", pg_url, "db", "backup", str(backup))

    base, _, _ = pg_url.rpartition("/")
    empty = f"pbt_restore_{tmp_path.name[-8:].lower().replace('-', '_')}"
    admin = await asyncpg.connect(base.replace("postgresql+asyncpg://", "postgresql://") + "/postgres")
    try:
        await admin.execute(f'CREATE DATABASE "{empty}"')
        try:
            await asyncio.to_thread(_cli, monkeypatch, tmp_path / "pg", f"{base}/{empty}", "db", "restore", str(backup))
            assert await _served(aiohttp_client, make_app, f"{base}/{empty}", key) == 200
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{empty}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.mark.parametrize("command", ["backup", "restore"])
def test_missing_files_are_one_line(tmp_path, monkeypatch, command):
    result = _cli(monkeypatch, tmp_path / "d", None, "db", command, str(tmp_path / "nowhere" / "x.sqlite"), ok=False)
    assert "Traceback" not in result.output and ("there is no" in result.output)
