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

from patchbay.core.appkeys import (
    CONNECTION_REMOVAL_LISTENERS,
    CONNECTIONS,
    CRON,
    DB,
    ERASERS,
    FLOW_RUNNER,
    JOBS,
    LIMITS,
    METRICS,
    OUTBOUND,
    PLUGIN_MANAGER,
    RATE_LIMITER,
    READINESS,
    REGISTRY,
    SECRETS,
    SERVICES,
    SETTINGS,
    SIGNING_KEYS,
    WEBHOOK_INGEST,
    WEBHOOK_LISTENERS,
)
from patchbay.core.billing.limits import limits_of
from patchbay.core.connections.lifecycle import RemovalListeners
from patchbay.core.features import FEATURES
from patchbay.core.http.bodies import body_limit_middleware, no_nul_middleware
from patchbay.core.http.errors import error_middleware
from patchbay.core.http.middleware import request_id_middleware, throttle_middleware
from patchbay.core.jobs.worker import background_work
from patchbay.core.services import Services, build_services
from patchbay.core.settings import Settings
from patchbay.core.webhooks.listeners import WebhookListeners


def create_app(settings: Settings, *, plugins: Iterable[object] = (), background: bool = True, migrate: bool = True) -> web.Application:
    """Build the application around the services of ``settings`` (``core.services.build_services``).

    :param plugins: extra plugin objects registered beside the installed ones (tests, embedding).
    :param background: run job workers (``settings.workers`` concurrent jobs) and, when
        ``settings.scheduler``, the periodic scheduler inside this process.
    :param migrate: bring the database schema up to date at start (SQLite's folder is created).
    """
    services = build_services(settings, plugins=plugins)
    app = web.Application(middlewares=[request_id_middleware, error_middleware, no_nul_middleware, throttle_middleware, body_limit_middleware], client_max_size=settings.max_body_bytes)
    app[SERVICES] = services
    for key, part in ((SETTINGS, settings), (PLUGIN_MANAGER, services.plugin_manager), (REGISTRY, services.registry), (DB, services.db), (SECRETS, services.secrets), (SIGNING_KEYS, services.signing_keys), (JOBS, services.jobs), (CRON, services.cron), (RATE_LIMITER, services.rate_limiter), (OUTBOUND, services.outbound)):
        app[key] = part  # transitional: modules not yet moved to the services read these keys
    _share_domain_parts(app, services)
    app.cleanup_ctx.append(_services_running(migrate=migrate))
    for module_name in FEATURES:
        importlib.import_module(module_name).setup(app)
    for key in (CONNECTIONS, FLOW_RUNNER, WEBHOOK_INGEST, METRICS, READINESS):
        if key in app:
            services[key] = app[key]
    if background:
        app.cleanup_ctx.append(_background_work)
    app.on_startup.append(_freeze_startup_objects)
    app.on_cleanup.append(_unfreeze)
    return app


def _share_domain_parts(app: web.Application, services: Services) -> None:
    """Transitional: the parts that modules not yet moved to ``install(services)`` create on first
    use, made once and held by both the app and the services."""
    if services.connection_removal_listeners is None:
        services.connection_removal_listeners = RemovalListeners()
    if services.webhook_listeners is None:
        services.webhook_listeners = WebhookListeners()
    for key in (ERASERS, CONNECTION_REMOVAL_LISTENERS, WEBHOOK_LISTENERS):
        app[key] = services[key]
    if services.limits is None:
        services.limits = limits_of(app)
    else:
        app[LIMITS] = services.limits


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
