"""``patchbay db ...``: schema migrations."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import click

from patchbay.cli.runtime import run_with_database
from patchbay.core.storage.db import Database
from patchbay.core.storage.migrate import new_revision


@click.group()
def db() -> None:
    """Database schema."""


@db.command("upgrade")
def upgrade_command() -> None:
    """Bring the configured database to the newest schema."""

    async def done(settings, database, _box):
        return database.dialect

    dialect = run_with_database(done)
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
