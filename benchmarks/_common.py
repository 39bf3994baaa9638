"""What several benchmarks share: free ports, CPU time of a process (and of its children, for
``patchbay serve --processes N``), scratch PostgreSQL databases, the app built and served in a
process of its own as ``patchbay serve`` builds it and on the event loop it runs, and the
``--processes`` option."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from aiohttp import web


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- CPU time ---------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of one process so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of a process and of its living descendants (the processes of ``patchbay serve
    --processes N``). Take it before and after a measurement with the same children alive."""
    return cpu_seconds(pid) + sum(tree_cpu_seconds(child) for child in children(pid))


# -- the event loop ---------------------------------------------------------------------------------


def serve_loop(settings) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes the event loop ``patchbay serve`` runs on under ``settings`` (``event_loop``);
    asyncio's for a tree from before that setting (``--baseline-tree``)."""
    try:
        from patchbay.cli.main import loop_factory
    except ImportError:
        return asyncio.new_event_loop
    return loop_factory(settings)


def loop_name(new_loop: Callable[[], asyncio.AbstractEventLoop]) -> str:
    """``uvloop`` or ``asyncio``: the library of what makes a loop."""
    return new_loop.__module__.partition(".")[0]


def event_loop_line(environ: Mapping[str, str] = os.environ) -> str:
    """``event loop: uvloop``: what ``patchbay serve`` of this tree runs on under ``environ``'s
    ``PATCHBAY_EVENT_LOOP``, printed beside a benchmark's settings: figures on uvloop and on
    asyncio's loop are not comparable."""
    from patchbay.core.settings import load_settings

    settings = load_settings({}, {name: value for name, value in environ.items() if name == "PATCHBAY_EVENT_LOOP"})
    return f"event loop: {loop_name(serve_loop(settings))}"


# -- the --processes option -------------------------------------------------------------------------


def add_processes_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--processes",
        default="1",
        type=lambda text: [int(n) for n in text.split(",")],
        help="patchbay serve --processes N; a comma-separated list (1,2) measures each and prints the ratio to the first [1]",
    )


# -- scratch PostgreSQL databases -------------------------------------------------------------------


async def pg_scratch(base_url: str, prefix: str = "pb_bench") -> tuple[str, str, str]:
    """A new empty database on the server of ``base_url``: (its name, its URL, the admin DSN)."""
    import asyncpg

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = base_url.replace("postgresql+asyncpg://", "postgresql://", 1)
    connection = await asyncpg.connect(admin)
    try:
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()
    return name, base_url.rpartition("/")[0] + "/" + name, admin


async def pg_drop(admin: str, name: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(admin)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await connection.close()


# -- a server in a process of its own ---------------------------------------------------------------


def server_app(settings, plugins, **options) -> web.Application:
    """The app as ``patchbay serve`` of the tree being measured runs it, with ``plugins`` beside the
    installed packs (``patchbay.cli.main.server_app``: the garbage collector settled once started).
    A tree from before that function: its ``create_app``, settled as its ``serve`` settled it."""
    try:
        from patchbay.cli.main import server_app as serve_builds
    except ImportError:
        from patchbay.core.app import create_app

        app = create_app(settings, plugins=plugins, **options)
        try:
            from patchbay.cli.runtime import settle_garbage_collector
        except ImportError:
            return app
        app.on_startup.append(settle_garbage_collector)
        return app
    return serve_builds(settings, plugins=plugins, **options)


async def serve(app: web.Application, out, info=None, **runner_options) -> None:
    """Serve ``app`` on a free loopback port; send ``port`` (or ``(port, await info(app))``) to
    ``out``; run until SIGTERM, then clean up (sessions closed, buffered rows written)."""
    runner = web.AppRunner(app, **runner_options)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    out.send((port, await info(app)) if info else port)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await runner.cleanup()


def serve_processes(make_app, count: int, out, info=None) -> None:
    """``make_app()`` served as ``patchbay serve --processes count`` serves: a free loopback port
    bound once, the app built and started in forked processes. ``info(app)`` runs first on an app
    of its own (set-up rows), then ``(port, info)`` goes to ``out``. Runs until SIGTERM."""
    from patchbay.cli.main import run_processes
    from patchbay.core.appkeys import SERVICES
    from patchbay.core.http.processes import listening_sockets

    sockets = listening_sockets("127.0.0.1", 0, count)
    port = sockets[0][0].getsockname()[1]

    async def prepare():
        setup = make_app(background=False)
        async with setup[SERVICES].running():
            return await info(setup) if info else None

    prepared = asyncio.run(prepare())
    out.send((port, prepared) if info else port)
    run_processes(make_app(background=False, migrate=False), sockets, count)


def start_process(target, *args, context=None, processes: list | None = None):
    """``target(*args, out)`` in a process of its own (daemonic); answers the process and the first
    thing it sends to ``out``."""
    import multiprocessing

    context = context or multiprocessing.get_context()
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=target, args=(*args, send), daemon=True)
    process.start()
    if processes is not None:
        processes.append(process)
    return process, receive.recv()
