"""The ``patchbay`` command: the server, workers, and administration (contract section 3)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import socket
from collections.abc import Callable, Iterable

import click
from aiohttp import web

from patchbay.cli import actions, admin, db_commands, openapi_command, packs
from patchbay.cli.runtime import plugin_failure, settings_from, settle_garbage_collector
from patchbay.core.app import create_app
from patchbay.core.appkeys import SERVICES
from patchbay.core.http import metrics, processes
from patchbay.core.http.middleware import JsonAccessLogger, configure_logging
from patchbay.core.jobs.worker import GRACE_SECONDS, background_work
from patchbay.core.plugins.registry import PluginError
from patchbay.core.ratelimit.limiter import RateLimiter, storage_for
from patchbay.core.services import build_services
from patchbay.core.settings import SettingsError, listen_address
from patchbay.core.storage.db import Database
from patchbay.core.storage.migrate import upgrade

log = logging.getLogger(__name__)


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


def server_app(settings, *, plugins: Iterable[object] = (), background: bool = True, migrate: bool = True) -> web.Application:
    """The application as ``serve`` runs it: ``create_app`` (``plugins``: packs registered beside
    the installed ones) and the garbage collector settled once it has started
    (:func:`~patchbay.cli.runtime.settle_garbage_collector`), or a one-line CLI error naming a
    broken plugin. The benchmarks build their server with it, so that they measure what runs."""
    try:
        app = create_app(settings, plugins=plugins, background=background, migrate=migrate)
    except PluginError as error:
        raise plugin_failure(error) from None
    app.on_startup.append(settle_garbage_collector)
    return app


@cli.command()
@click.option("--host", help="Interface to listen on [127.0.0.1].")
@click.option("--port", type=int, help="Port to listen on [8080].")
@click.option(
    "--processes",
    type=click.IntRange(min=1),
    envvar="PATCHBAY_PROCESSES",
    help=f"Server processes sharing the port (PATCHBAY_PROCESSES) [one per core, at most {processes.MAX_DEFAULT_PROCESSES}].",
)
@click.option("--data-dir", help="Folder of the SQLite file and generated keys [./patchbay-data].")
@click.option("--database-url", help="sqlite+aiosqlite:///... or postgresql+asyncpg://...")
@click.option("--base-url", help="Public URL of the connect API.")
@click.option("--issuer", help="Issuer of the identity provider [the base URL].")
@click.option("--secret-key", help="Comma-separated secrets; the first encrypts.")
@click.option("--cron-secret", help="Bearer secret that opens /api/cron/*.")
@click.option("--scheduler/--no-scheduler", default=None, help="Run the periodic jobs (in the first process).")
@click.option("--allow-insecure-targets/--no-allow-insecure-targets", default=None, help="Accept http and private targets (development only).")
@click.option("--trusted-proxies", help="Comma-separated networks of load balancers whose X-Forwarded-For is believed.")
@click.option("--workers", type=int, help="Jobs run at once by each process (0: none).")
@click.option("--event-loop", help="auto (uvloop when installed), uvloop or asyncio.")
@click.option("--log-level", help="DEBUG, INFO, WARNING or ERROR.")
@click.option("--config", help="TOML settings file (PATCHBAY_CONFIG).")
def serve(**flags) -> None:
    """Run the web server with its workers and scheduler, in one process or several sharing the port."""
    count = flags.pop("processes", None)
    settings = settings_from(flags)
    _logging(settings.log_level)
    new_loop = loop_factory(settings)  # before anything starts: uvloop chosen but not installed is one line
    first_start = not settings.database_url and not (settings.data_dir / "patchbay.db").exists()
    if count is None:
        count = processes.default_processes()
    if count > 1 and not processes.can_fork():
        click.echo("warning: several processes need os.fork; running one", err=True)
        count = 1
    if count == 1:
        _serve_one(settings, first_start, new_loop)
    else:
        _serve_several(settings, first_start, count, new_loop)


# ---------------------------------------------------------------------------------------------
# The event loop
# ---------------------------------------------------------------------------------------------


def loop_factory(settings) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes a new event loop of ``settings.event_loop``: uvloop's (``auto``: when it is
    installed) or asyncio's. Make the loop in the process that runs it: a loop never crosses a fork.
    uvloop chosen but not installed is a :class:`SettingsError`."""
    if settings.event_loop == "asyncio":
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError:
        if settings.event_loop == "uvloop":
            raise SettingsError(
                "event_loop (PATCHBAY_EVENT_LOOP): uvloop is chosen but not installed (it has no Windows build); choose auto or asyncio"
            ) from None
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def loop_name(made_by: asyncio.AbstractEventLoop | Callable[[], asyncio.AbstractEventLoop]) -> str:
    """``uvloop`` or ``asyncio``: the library of an event loop, or of the function that makes one."""
    return made_by.__module__.partition(".")[0]


# ---------------------------------------------------------------------------------------------
# serve
# ---------------------------------------------------------------------------------------------


def _announce(settings, first_start: bool, count: int = 1, *, event_loop: str) -> None:
    base = settings.public_base_url
    click.echo(f"patchbay is listening on http://{settings.host}:{settings.port}")
    click.echo(f"  console:           {base}/console/")
    click.echo(f"  connect API:       {base}/connect/v1")
    click.echo(f"  identity provider: {settings.resolved_issuer}/.well-known/openid-configuration")
    click.echo(f"  database:          {settings.resolved_database_url.split('@')[-1]}")
    click.echo(f"  event loop:        {event_loop}")
    if count > 1:
        click.echo(f"  processes:         {count}")
    if settings.metrics.listen:
        others = f" (process 0; the next {count - 1} port(s): the other processes)" if count > 1 else ""
        click.echo(f"  metrics:           http://{settings.metrics.listen}/metrics{others}")
    if first_start:
        click.echo("First start. Create a workspace, an API key and a user:")
        click.echo('  patchbay workspaces create --name "My workspace"')
        click.echo("  patchbay api-keys create --workspace <workspace id>")
        click.echo("  patchbay users create --email me@example.com --password <password> --workspace <workspace id> --role admin")
        click.echo(f"then sign in to the console at {base}/console/")


def _serve_one(settings, first_start: bool, new_loop: Callable[[], asyncio.AbstractEventLoop]) -> None:
    """One process: the web server, its workers and the scheduler."""
    app = server_app(settings)

    async def announce(_app: web.Application) -> None:
        _announce(settings, first_start, event_loop=loop_name(asyncio.get_running_loop()))

    app.on_startup.append(announce)
    if settings.metrics.listen:  # first: a taken address stops the start before anything else opens
        app.cleanup_ctx.insert(0, metrics.listener(settings.metrics.listen))
    # On SIGTERM: stop accepting, let in-flight requests finish for up to SHUTDOWN_SECONDS, then
    # the app's cleanup stops the workers (grace, then release) and writes buffered rows.
    try:
        web.run_app(
            app, host=settings.host, port=settings.port, access_log_class=JsonAccessLogger, print=None, shutdown_timeout=SHUTDOWN_SECONDS, loop=new_loop()
        )
    except OSError as error:
        raise click.ClickException(f"cannot listen on {settings.host}:{settings.port}: {error.strerror or error}") from None


def _serve_several(settings, first_start: bool, count: int, new_loop: Callable[[], asyncio.AbstractEventLoop]) -> None:
    """``count`` processes: this one binds the port (and the metrics ports, one per process),
    migrates the schema and builds the app once, then forks the children that run it
    (``core.http.processes``). Process 0 runs the scheduler; each runs ``--workers`` jobs."""
    try:
        sockets = processes.listening_sockets(settings.host, settings.port, count)
    except OSError as error:
        raise click.ClickException(f"cannot listen on {settings.host}:{settings.port}: {error.strerror or error}") from None
    metrics_sockets = _metrics_sockets(settings.metrics.listen, count) if settings.metrics.listen else []
    asyncio.run(_migrate(settings))  # once, before the processes start
    app = server_app(settings, background=False, migrate=False)
    _announce(settings, first_start, count, event_loop=loop_name(new_loop))
    if run_processes(app, sockets, count, metrics_sockets):
        raise click.ClickException("a server process failed to start (its error is above)")


def run_processes(app: web.Application, sockets: list[list[socket.socket]], count: int, metrics_sockets: list[list[socket.socket]] = ()) -> int:
    """Run ``app`` (built with ``background=False, migrate=False``, never started) in ``count``
    forked processes on ``sockets`` (``processes.listening_sockets``) until SIGTERM or SIGINT;
    answers the exit code. Process 0 runs the scheduler; each runs ``--workers`` jobs."""
    services = app[SERVICES]
    settings = services.settings
    # counters every process sees: on SQLite the file, not each process's memory
    services.rate_limiter = RateLimiter(storage_for(services.db, settings.redis_url, processes=count))
    parent = os.getpid()
    new_loop = loop_factory(settings)

    def child(index: int, ready_fd: int) -> int:
        processes.label_logs(f"process {index} pid {os.getpid()}")
        app.cleanup_ctx.append(_background(scheduler=settings.scheduler and index == 0))
        app.cleanup_ctx.append(processes.parent_watch(parent))
        if metrics_sockets:
            app.cleanup_ctx.insert(0, _metrics_on(metrics_sockets[index]))
        app.on_startup.append(_log_event_loop)
        app.on_startup.append(processes.notify_ready(ready_fd))
        # each child makes its loop after the fork: a loop (uvloop's above all) never crosses one
        web.run_app(app, sock=sockets[index], access_log_class=JsonAccessLogger, print=None, shutdown_timeout=SHUTDOWN_SECONDS, loop=new_loop())
        return 0

    processes.label_logs(f"supervisor pid {parent}")
    gc.freeze()  # what the children share stays in shared pages: the collector never writes to it
    return processes.Supervisor(count, child, stop_seconds=SHUTDOWN_SECONDS + GRACE_SECONDS + 15).run()


async def _log_event_loop(_app: web.Application) -> None:
    """Which loop a child serves on, as it runs (the parent's announcement says what it chose)."""
    log.info("serving on the %s event loop", loop_name(asyncio.get_running_loop()))


async def _migrate(settings) -> None:
    db = Database(settings.resolved_database_url)
    try:
        if not db.is_postgres:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
        await upgrade(db)
    finally:
        await db.close()


def _metrics_sockets(address: str, count: int) -> list[list[socket.socket]]:
    """``[metrics] listen`` for process 0, the next ports for the others: each process answers its
    own figures (Prometheus scrapes each one)."""
    host, port = listen_address(address)
    bound: list[list[socket.socket]] = []
    for index in range(count):
        try:
            (group,) = processes.listening_sockets(host, port + index, 1)
        except OSError as error:
            for sock in (sock for group in bound for sock in group):
                sock.close()
            shown = address if index == 0 else f"{host}:{port + index}"
            raise click.ClickException(f"PATCHBAY_METRICS_LISTEN: cannot listen on {shown}: {error.strerror or error}") from None
        bound.append(group)
    return bound


def _metrics_on(sockets: list[socket.socket]):
    """``metrics.listener`` on the sockets the parent bound."""

    async def metrics_listener(app: web.Application):
        async def open_metrics(_request: web.Request) -> web.Response:
            return await metrics._exposition(app)

        side = web.Application()
        side.router.add_get("/metrics", open_metrics)
        runner = web.AppRunner(side, access_log=None)
        await runner.setup()
        for sock in sockets:
            await web.SockSite(runner, sock).start()
        yield
        await runner.cleanup()

    return metrics_listener


def _background(*, scheduler: bool):
    async def background(app: web.Application):
        async with background_work(app[SERVICES], scheduler=scheduler):
            yield

    return background


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
    with asyncio.Runner(loop_factory=loop_factory(settings)) as runner:
        runner.run(_run_worker(settings))


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
        log.info("running on the %s event loop", loop_name(loop))
        click.echo("patchbay worker running")
        await stop.wait()


cli.add_command(db_commands.db)
cli.add_command(packs.packs)
cli.add_command(actions.actions)
cli.add_command(openapi_command.openapi)
for command in admin.COMMANDS:
    cli.add_command(command)

__all__ = ["cli"]
