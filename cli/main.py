"""The ``patchbay`` command: the server, workers, and administration (contract section 3)."""

from __future__ import annotations

import asyncio
import logging
import signal

import click
from aiohttp import web

from patchbay.cli import admin, db_commands
from patchbay.cli.runtime import settings_from
from patchbay.core.app import create_app
from patchbay.core.http.middleware import JsonAccessLogger


@click.group()
def cli() -> None:
    """patchbay: connections, proxy, webhooks, flows and an OpenID Connect provider."""


def _logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")


@cli.command()
@click.option("--host", help="Interface to listen on [127.0.0.1].")
@click.option("--port", type=int, help="Port to listen on [8080].")
@click.option("--data-dir", help="Folder of the SQLite file and generated keys [./patchbay-data].")
@click.option("--database-url", help="sqlite+aiosqlite:///... or postgresql+asyncpg://...")
@click.option("--base-url", help="Public URL of the connect API.")
@click.option("--issuer", help="Issuer of the identity provider [the base URL].")
@click.option("--secret-key", help="Comma-separated secrets; the first encrypts.")
@click.option("--cron-secret", help="Bearer secret that opens /api/cron/*.")
@click.option("--scheduler/--no-scheduler", default=None, help="Run the periodic jobs in this process.")
@click.option("--allow-insecure-targets/--no-allow-insecure-targets", default=None, help="Accept http and private targets (development only).")
@click.option("--workers", type=int, help="Jobs run at once by this process (0: none).")
@click.option("--log-level", help="DEBUG, INFO, WARNING or ERROR.")
@click.option("--config", help="TOML settings file (PATCHBAY_CONFIG).")
def serve(**flags) -> None:
    """Run the web server with its workers and scheduler."""
    settings = settings_from(flags)
    _logging(settings.log_level)
    first_start = not settings.database_url and not (settings.data_dir / "patchbay.db").exists()
    app = create_app(settings)
    base = settings.public_base_url

    async def announce(_app: web.Application) -> None:
        click.echo(f"patchbay is listening on http://{settings.host}:{settings.port}")
        click.echo(f"  connect API:       {base}/connect/v1")
        click.echo(f"  identity provider: {settings.resolved_issuer}/.well-known/openid-configuration")
        click.echo(f"  database:          {settings.resolved_database_url.split('@')[-1]}")
        if first_start:
            click.echo("First start. Create a workspace, an API key and a user:")
            click.echo('  patchbay workspaces create --name "My workspace"')
            click.echo("  patchbay api-keys create --workspace <workspace id>")
            click.echo("  patchbay users create --email me@example.com --password <password> --workspace <workspace id> --role admin")

    app.on_startup.append(announce)
    web.run_app(app, host=settings.host, port=settings.port, access_log_class=JsonAccessLogger, print=None)


@cli.command()
@click.option("--workers", type=int, help="Jobs run at once [16].")
@click.option("--scheduler/--no-scheduler", default=False, help="Also schedule the periodic jobs.")
@click.option("--config", help="TOML settings file (PATCHBAY_CONFIG).")
def worker(**flags) -> None:
    """Run job workers only (scale-out beside `serve`, on PostgreSQL)."""
    settings = settings_from(flags)
    _logging(settings.log_level)
    asyncio.run(_run_worker(settings))


async def _run_worker(settings) -> None:
    runner = web.AppRunner(create_app(settings))
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    click.echo("patchbay worker running")
    await stop.wait()
    await runner.cleanup()


cli.add_command(db_commands.db)
for command in admin.COMMANDS:
    cli.add_command(command)

__all__ = ["cli"]
