"""The application factory: settings in, a configured ``aiohttp`` application out.

The services (``core.services``) are built first and put on the app under ``appkeys.SERVICES``;
each feature then adds its routes. The services' resources, the job workers and the scheduler are
opened and closed by ``cleanup_ctx``.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import AsyncIterator, Iterable

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.features import FEATURES
from patchbay.core.http.pipeline import request_pipeline
from patchbay.core.jobs.worker import background_work
from patchbay.core.services import build_services
from patchbay.core.settings import Settings


def create_app(settings: Settings, *, plugins: Iterable[object] = (), background: bool = True, migrate: bool = True) -> web.Application:
    """Build the application around the services of ``settings`` (``core.services.build_services``).

    :param plugins: extra plugin objects registered beside the installed ones (tests, embedding).
    :param background: run job workers (``settings.workers`` concurrent jobs) and, when
        ``settings.scheduler``, the periodic scheduler inside this process.
    :param migrate: bring the database schema up to date at start (SQLite's folder is created).
    """
    services = build_services(settings, plugins=plugins)
    app = web.Application(
        middlewares=[request_pipeline],
        client_max_size=settings.max_body_bytes,
    )
    app[SERVICES] = services
    app.cleanup_ctx.append(_services_running(migrate=migrate))
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


def _services_running(*, migrate: bool):
    async def services_running(app: web.Application) -> AsyncIterator[None]:
        async with app[SERVICES].running(migrate=migrate):
            yield

    return services_running


async def _background_work(app: web.Application) -> AsyncIterator[None]:
    async with background_work(app[SERVICES]):
        yield
