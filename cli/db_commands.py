"""``patchbay db ...``: schema migrations, backup and restore."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import click

from patchbay.cli.runtime import run_with_database, settings_from
from patchbay.core.storage import backup as backups
from patchbay.core.storage.db import Database
from patchbay.core.storage.migrate import new_revision


@click.group()
def db() -> None:
    """Database schema, backup and restore."""


@db.command("upgrade")
def upgrade_command() -> None:
    """Bring the configured database to the newest schema."""

    async def done(settings, database, _box):
        return database.dialect

    dialect = run_with_database(done, create=True)
    click.echo(f"database schema is up to date ({dialect})")


@db.command("revision")
@click.option("--branch", required=True, help="The feature's migration branch label (e.g. flows).")
@click.option("-m", "--message", required=True)
def revision_command(branch: str, message: str) -> None:
    """(Developers) Write a migration for models not yet in the schema, on a feature's branch."""

    async def main() -> str:
        with tempfile.TemporaryDirectory() as folder:
            database = Database(f"sqlite+aiosqlite:///{Path(folder) / 'scratch.db'}")
            try:
                return await new_revision(database, branch=branch, message=message)
            finally:
                await database.close()

    click.echo(f"wrote revision {asyncio.run(main())}; review it before committing")


@db.command("backup")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def backup_command(path: Path) -> None:
    """Write a consistent backup of the configured database to PATH while it serves (SQLite's
    online backup; pg_dump's custom format on PostgreSQL). Keep the secret key beside it."""
    settings = settings_from()
    try:
        backups.backup(settings.resolved_database_url, path)
    except backups.BackupError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"backup written to {path}; credentials in it need the same PATCHBAY_SECRET_KEY to be read")


@db.command("restore")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace a database that already holds data.")
def restore_command(path: Path, force: bool) -> None:
    """Replace the configured database with the backup PATH, then bring its schema up to date.
    Stop the servers and workers first."""
    settings = settings_from()
    try:
        backups.restore(settings.resolved_database_url, path, force=force)
    except backups.BackupError as error:
        raise click.ClickException(str(error)) from None

    async def done(_settings, database, _box):
        return database.dialect

    run_with_database(done, create=True)
    click.echo(f"restored {path}; the schema is up to date")
