"""The ``patchbay`` command: the server, workers, and administration (contract section 3)."""

from __future__ import annotations

import asyncio
import signal

import click
from aiohttp import web

from patchbay.cli import actions, admin, db_commands, packs
from patchbay.cli.runtime import plugin_failure, settings_from, settle_garbage_collector
from patchbay.core.app import create_app
from patchbay.core.http import metrics
from patchbay.core.http.middleware import JsonAccessLogger, configure_logging
from patchbay.core.jobs.worker import background_work
from patchbay.core.plugins.registry import PluginError
from patchbay.core.services import build_services
from patchbay.core.settings import SettingsError


class PatchbayGroup(click.Group):
    """Start-up failures a user can fix (a bad setting, a provider override or pack that does not
    load) end as one line naming the problem, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (SettingsError, PluginError) as error:
            raise click.ClickException(str(error)) from None


@click.group(cls=PatchbayGroup)
@click.option("--data-dir", help="Folder of the SQLite file and generated keys, for every command [./patchbay-data].")
@click.option("--config", help="TOML settings file, for every command (PATCHBAY_CONFIG).")
@click.pass_context
def cli(context: click.Context, data_dir: str | None, config: str | None) -> None:
    """patchbay: connections, proxy, webhooks, flows and an OpenID Connect provider."""
    context.obj = {name: value for name, value in (("data_dir", data_dir), ("config", config)) if value is not None}


def _logging(level: str) -> None:
    configure_logging(level)


def _app(settings) -> web.Application:
    """The application, or a one-line CLI error naming a broken plugin."""
    try:
        app = create_app(settings)
    except PluginError as error:
        raise plugin_failure(error) from None
    app.on_startup.append(settle_garbage_collector)
    return app


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
@click.option("--trusted-proxies", help="Comma-separated networks of load balancers whose X-Forwarded-For is believed.")
@click.option("--workers", type=int, help="Jobs run at once by this process (0: none).")
@click.option("--log-level", help="DEBUG, INFO, WARNING or ERROR.")
@click.option("--config", help="TOML settings file (PATCHBAY_CONFIG).")
def serve(**flags) -> None:
    """Run the web server with its workers and scheduler."""
    settings = settings_from(flags)
    _logging(settings.log_level)
    first_start = not settings.database_url and not (settings.data_dir / "patchbay.db").exists()
    app = _app(settings)
    base = settings.public_base_url

    async def announce(_app: web.Application) -> None:
        click.echo(f"patchbay is listening on http://{settings.host}:{settings.port}")
        click.echo(f"  connect API:       {base}/connect/v1")
        click.echo(f"  identity provider: {settings.resolved_issuer}/.well-known/openid-configuration")
        click.echo(f"  database:          {settings.resolved_database_url.split('@')[-1]}")
        if settings.metrics.listen:
            click.echo(f"  metrics:           http://{settings.metrics.listen}/metrics")
        if first_start:
            click.echo("First start. Create a workspace, an API key and a user:")
            click.echo('  patchbay workspaces create --name "My workspace"')
            click.echo("  patchbay api-keys create --workspace <workspace id>")
            click.echo("  patchbay users create --email me@example.com --password <password> --workspace <workspace id> --role admin")

    app.on_startup.append(announce)
    if settings.metrics.listen:  # first: a taken address stops the start before anything else opens
        app.cleanup_ctx.insert(0, metrics.listener(settings.metrics.listen))
    # On SIGTERM: stop accepting, let in-flight requests finish for up to SHUTDOWN_SECONDS, then
    # the app's cleanup stops the workers (grace, then release) and writes buffered rows.
    try:
        web.run_app(app, host=settings.host, port=settings.port, access_log_class=JsonAccessLogger, print=None, shutdown_timeout=SHUTDOWN_SECONDS)
    except OSError as error:
        raise click.ClickException(f"cannot listen on {settings.host}:{settings.port}: {error.strerror or error}") from None


#: how long in-flight requests may run on after SIGTERM
SHUTDOWN_SECONDS = 10.0


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
    """The services alone (no web application): their resources, the job workers and, with
    ``--scheduler``, the periodic scheduler, until SIGINT or SIGTERM."""
    try:
        services = build_services(settings)
    except PluginError as error:
        raise plugin_failure(error) from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with services.running(), background_work(services):
        click.echo("patchbay worker running")
        await stop.wait()


cli.add_command(db_commands.db)
cli.add_command(packs.packs)
cli.add_command(actions.actions)
for command in admin.COMMANDS:
    cli.add_command(command)

__all__ = ["cli"]
