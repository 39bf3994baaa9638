"""The application factory: settings in, a configured ``aiohttp`` application out.

Services are created here and put on the app under the keys of ``appkeys``; resources that need a
running loop (the database check, signing keys, the outbound client, workers and the scheduler) are
opened and closed by ``cleanup_ctx``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import logging
from collections.abc import AsyncIterator, Iterable

from aiohttp import web

from patchbay.core.appkeys import CRON, DB, JOBS, OUTBOUND, PLUGIN_MANAGER, RATE_LIMITER, REGISTRY, SECRETS, SETTINGS, SIGNING_KEYS
from patchbay.core.features import FEATURES
from patchbay.core.http.bodies import body_limit_middleware, no_nul_middleware
from patchbay.core.http.errors import error_middleware
from patchbay.core.http.middleware import request_id_middleware, throttle_middleware
from patchbay.core.jobs.cron import CronRegistry
from patchbay.core.jobs.queue import JobQueue
from patchbay.core.jobs.worker import Worker
from patchbay.core.outbound import Outbound
from patchbay.core.plugins.manager import build_registry
from patchbay.core.ratelimit.limiter import RateLimiter, storage_for
from patchbay.core.security.secrets import SecretBox, load_or_create_secrets
from patchbay.core.security.signing_keys import SigningKeys
from patchbay.core.settings import Settings
from patchbay.core.storage.db import Database
from patchbay.core.storage.migrate import upgrade

log = logging.getLogger(__name__)

def create_app(settings: Settings, *, plugins: Iterable[object] = (), background: bool = True, migrate: bool = True) -> web.Application:
    """Build the application.

    :param plugins: extra plugin objects registered beside the installed ones (tests, embedding).
    :param background: run job workers (``settings.workers`` concurrent jobs) and, when
        ``settings.scheduler``, the periodic scheduler inside this process.
    :param migrate: bring the database schema up to date at start (SQLite's folder is created).
    """
    app = web.Application(middlewares=[request_id_middleware, error_middleware, no_nul_middleware, throttle_middleware, body_limit_middleware], client_max_size=settings.max_body_bytes)
    app[SETTINGS] = settings
    app[PLUGIN_MANAGER], app[REGISTRY] = build_registry(settings, plugins)
    db = Database(settings.resolved_database_url)
    app[DB] = db
    app[SECRETS] = SecretBox(load_or_create_secrets(settings.secret_key, settings.data_dir))
    app[SIGNING_KEYS] = SigningKeys(db, app[SECRETS])
    app[JOBS] = JobQueue(db)
    app[CRON] = CronRegistry(app[JOBS])
    app[RATE_LIMITER] = RateLimiter(storage_for(db, settings.redis_url))
    app[OUTBOUND] = Outbound(allow_insecure=settings.allow_insecure_targets, limits=settings.outbound)
    app.cleanup_ctx.append(_core_resources(migrate=migrate))
    for module_name in FEATURES:
        importlib.import_module(module_name).setup(app)
    if background:
        app.cleanup_ctx.append(_background_work)
    app.on_startup.append(_freeze_startup_objects)
    app.on_cleanup.append(_unfreeze)
    return app


async def _freeze_startup_objects(_app: web.Application) -> None:
    """Keep what the start built (modules, the registry, compiled queries, the OpenAPI document)
    out of the garbage collector's full passes while the app runs: each pass would otherwise walk
    those hundreds of thousands of objects again, a pause of about 0.1 s every few thousand
    requests. Undone at cleanup, so that a process running many apps (tests) can collect them."""
    gc.freeze()


async def _unfreeze(_app: web.Application) -> None:
    gc.unfreeze()


async def _migrate(app: web.Application) -> None:
    db = app[DB]
    if not db.is_postgres:
        app[SETTINGS].data_dir.mkdir(parents=True, exist_ok=True)
    await upgrade(db)


def _core_resources(*, migrate: bool):
    async def core_resources(app: web.Application) -> AsyncIterator[None]:
        if migrate:
            await _migrate(app)
        await app[OUTBOUND].start()
        await app[SIGNING_KEYS].ensure()
        yield
        await app[OUTBOUND].close()
        await app[DB].close()

    return core_resources


async def _background_work(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    stop = asyncio.Event()
    tasks = []
    worker = None
    if settings.workers > 0:
        worker = Worker(app, app[JOBS], concurrency=settings.workers)
        tasks.append(asyncio.create_task(worker.run(), name="patchbay-worker"))
    if settings.scheduler:
        tasks.append(asyncio.create_task(app[CRON].run_scheduler(stop), name="patchbay-scheduler"))
    yield
    stop.set()
    if worker is not None:
        worker.stop()
    for task in tasks:  # the worker bounds its own stop (grace, then cancel and release)
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(task, timeout=10)
