"""What every CLI command shares: settings, the database, and printing results."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import click

from patchbay.core.security.secrets import SecretBox, load_or_create_secrets
from patchbay.core.settings import Settings, SettingsError, load_settings
from patchbay.core.storage.db import Database
from patchbay.core.storage.migrate import upgrade

json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def settings_from(flags: dict[str, Any] | None = None) -> Settings:
    try:
        return load_settings(flags)
    except SettingsError as error:
        raise click.ClickException(f"invalid setting: {error}") from None


def run_with_database(work: Callable[[Settings, Database, SecretBox], Awaitable[Any]], flags: dict[str, Any] | None = None) -> Any:
    """Run ``work(settings, db, secrets)`` against the configured database, migrated first."""
    settings = settings_from(flags)

    async def main() -> Any:
        db = Database(settings.resolved_database_url)
        try:
            if db.url.startswith("sqlite"):
                settings.data_dir.mkdir(parents=True, exist_ok=True)
            await upgrade(db)
            box = SecretBox(load_or_create_secrets(settings.secret_key, settings.data_dir))
            return await work(settings, db, box)
        finally:
            await db.close()

    return asyncio.run(main())


def emit(data: Any, as_json: bool, text: str) -> None:
    click.echo(json.dumps(data, indent=2, default=str) if as_json else text)
