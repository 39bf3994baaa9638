"""What every CLI command shares: settings, the database, and printing results."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Awaitable, Callable
from typing import Any

import click

from patchbay.core.security.secrets import SecretBox, load_or_create_secrets
from patchbay.core.settings import Settings, SettingsError, load_settings
from patchbay.core.storage.db import Database
from patchbay.core.storage.migrate import upgrade

json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def _global_flags() -> dict[str, Any]:
    context = click.get_current_context(silent=True)
    root = context.find_root() if context else None
    return dict(root.obj or {}) if root is not None and isinstance(root.obj, dict) else {}


def settings_from(flags: dict[str, Any] | None = None) -> Settings:
    """Settings from a command's own flags, then the global ``--data-dir``/``--config``, then the
    environment and the file."""
    merged = {**_global_flags(), **{key: value for key, value in (flags or {}).items() if value is not None}}
    try:
        return load_settings(merged)
    except SettingsError as error:
        raise click.ClickException(f"invalid setting: {error}") from None


def _refuse_a_stray_data_folder(settings: Settings) -> None:
    """An admin command run from another folder must not quietly start a second, empty installation
    (with its own secret key) in ``./patchbay-data`` there."""
    default = Settings.model_fields["data_dir"].default
    if settings.database_url is None and settings.data_dir == default and not settings.data_dir.exists():
        raise click.ClickException(
            f"no patchbay data in {settings.data_dir.resolve()}: run this where `patchbay serve` runs, "
            "name the data with --data-dir, PATCHBAY_DATA_DIR or --config, or create it with `patchbay db upgrade`"
        )


def plugin_failure(error) -> click.ClickException:
    """The one-line CLI error of a :class:`PluginError`: a broken plugin is called one; a wrong
    ``[providers.<name>]`` or ``[plugins]`` setting is named by its table."""
    from patchbay.core.plugins.registry import PluginSettingsError

    return click.ClickException(str(error) if isinstance(error, PluginSettingsError) else f"broken plugin: {error}")


def registry_from(settings: Settings, *, quiet: bool = False):
    """The plugin manager and registry under ``settings``: a broken plugin is a one-line CLI
    error naming it, and plugins left out by ``[plugins] skip_broken`` are reported on stderr
    (unless ``quiet``: the caller shows them)."""
    from patchbay.core.plugins.manager import build_registry
    from patchbay.core.plugins.registry import PluginError

    try:
        pm, registry = build_registry(settings)
    except PluginError as error:
        raise plugin_failure(error) from None
    for failure in () if quiet else registry.load_errors:
        click.echo(f"warning: plugin {failure.plugin!r} ({failure.distribution}) left out: {failure.error}", err=True)
    return pm, registry


def run_with_database(work: Callable[[Settings, Database, SecretBox], Awaitable[Any]], flags: dict[str, Any] | None = None, *, create: bool = False) -> Any:
    """Run ``work(settings, db, secrets)`` against the configured database, migrated first.

    :param create: may create the default data folder (``db upgrade``); other commands refuse to."""
    settings = settings_from(flags)
    if not create:
        _refuse_a_stray_data_folder(settings)

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


def confirm_delete(yes: bool, what: str) -> None:
    """Ask before deleting ``what`` unless ``--yes`` was given."""
    if not yes:
        click.confirm(f"Delete {what}? This cannot be undone", abort=True)


def emit(data: Any, as_json: bool, text: str) -> None:
    click.echo(json.dumps(data, indent=2, default=str) if as_json else text)


#: The young generation's threshold in a running server or worker. At the default (700) the cyclic
#: garbage collector took 6 to 9 % of a loaded server's CPU (benchmarks/webhook_ingest.py, timed with
#: ``gc.callbacks``); at this one, about 1 %.
YOUNG_GENERATION_THRESHOLD = 50_000


async def settle_garbage_collector(_app: Any = None) -> None:
    """Once a server or worker has started: what start-up built (modules, the provider registry,
    templates; it lives as long as the process) is moved out of the collector's sight
    (``gc.freeze``), and the young generation is collected every ``YOUNG_GENERATION_THRESHOLD`` net
    allocations instead of 700. Registered last, so every other start-up step has run."""
    gc.collect()
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, middle, oldest)
