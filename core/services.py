"""What the services of patchbay need, in one object, built by one factory.

``build_services(settings)`` makes a :class:`Services`: the database, settings, plugin registry,
secrets, signing keys, outbound HTTP client, job queue and scheduler, rate limiter, and the runtime
objects each domain installs (``SERVICE_MODULES``: each has ``install(services)``, which registers its
job kinds and periodic jobs and creates its runtime objects). The web application
(``core.app.create_app``), the CLI and the worker each build one and pass it (or a narrower part of
it) to services; no service takes the web application.

Resources that need a running loop are opened and closed by ``async with services.running():``,
in the order they were added with :meth:`Services.add_resource`.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from patchbay.core.jobs.cron import CronRegistry
from patchbay.core.jobs.queue import JobQueue
from patchbay.core.outbound import Outbound
from patchbay.core.plugins.manager import build_registry
from patchbay.core.plugins.registry import Registry
from patchbay.core.ratelimit.limiter import RateLimiter, storage_for
from patchbay.core.security.secrets import SecretBox, load_or_create_secrets
from patchbay.core.security.signing_keys import SigningKeys
from patchbay.core.settings import Settings
from patchbay.core.storage.db import Database
from patchbay.core.storage.migrate import upgrade

if TYPE_CHECKING:
    from patchbay.core.billing.limits import PlanLimits
    from patchbay.core.connections.lifecycle import RemovalListeners
    from patchbay.core.connections.runtime import ConnectionsRuntime
    from patchbay.core.flows.engine import FlowRunner
    from patchbay.core.http.metrics import Metrics
    from patchbay.core.http.root import Readiness
    from patchbay.core.identity.service import IdentityRuntime
    from patchbay.core.integrations.service import IntegrationsRuntime
    from patchbay.core.mcp.service import McpRuntime
    from patchbay.core.security.service import CredentialCaches
    from patchbay.core.tables.imports import TableImports
    from patchbay.core.webhooks.ingest import IngestWriter
    from patchbay.core.webhooks.listeners import WebhookListeners

#: a resource opened before the services serve and closed after: an async context manager factory
Resource = Callable[["Services"], contextlib.AbstractAsyncContextManager[None]]

#: the modules whose ``install(services)`` adds a domain's job kinds, periodic jobs and runtime
#: objects, in order (their HTTP routes are added by ``core.features``)
SERVICE_MODULES: tuple[str, ...] = (
    "patchbay.core.billing.limits",
    "patchbay.core.connections.service",
    "patchbay.core.connect_ui.service",
    "patchbay.core.integrations.service",
    "patchbay.core.security.service",
    "patchbay.core.identity.service",
    "patchbay.core.console.service",
    "patchbay.core.flows.install",
    "patchbay.core.alerts.service",
    "patchbay.core.webhooks.service",
    "patchbay.core.leads.service",
    "patchbay.core.crm_push.service",
    "patchbay.core.workspaces.mail",
    "patchbay.core.compliance.service",
    "patchbay.core.records.sync",
    "patchbay.core.tables.service",
    "patchbay.core.mcp.service",
    "patchbay.core.tables.imports",
    "patchbay.core.jobs.maintenance",
)


@attrs.define(eq=False)
class Services:
    """Everything services need. Core parts are made by :func:`build_services`; the domain parts
    below them by the ``install`` of the domain that owns them, and are ``None`` until then."""

    settings: Settings
    plugin_manager: pluggy.PluginManager
    registry: Registry
    db: Database
    secrets: SecretBox
    signing_keys: SigningKeys
    jobs: JobQueue
    cron: CronRegistry
    rate_limiter: RateLimiter
    outbound: Outbound

    limits: PlanLimits | None = None
    erasers: dict[str, Any] = attrs.field(factory=dict)
    connections: ConnectionsRuntime | None = None
    connection_removal_listeners: RemovalListeners | None = None
    flow_runner: FlowRunner | None = None
    webhook_listeners: WebhookListeners | None = None
    webhook_ingest: IngestWriter | None = None
    metrics: Metrics | None = None
    readiness: Readiness | None = None
    credential_caches: CredentialCaches | None = None
    identity: IdentityRuntime | None = None
    mcp: McpRuntime | None = None
    table_imports: TableImports | None = None
    integrations: IntegrationsRuntime | None = None

    _resources: list[Resource] = attrs.field(factory=list, init=False, repr=False)

    def add_resource(self, resource: Resource) -> None:
        """Open ``resource(self)`` when the services start, close it when they stop (last added,
        first closed)."""
        self._resources.append(resource)

    @contextlib.asynccontextmanager
    async def running(self, *, migrate: bool = True) -> AsyncIterator[Services]:
        """Bring the schema up to date (``migrate``), start the outbound client, make sure a signing
        key exists, open every added resource; close them all on the way out."""
        async with contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(self.db.close)
            if migrate:
                if not self.db.is_postgres:
                    self.settings.data_dir.mkdir(parents=True, exist_ok=True)
                await upgrade(self.db)
            await self.outbound.start()
            stack.push_async_callback(self.outbound.close)
            await self.signing_keys.ensure()
            for resource in self._resources:
                await stack.enter_async_context(resource(self))
            yield self


def build_services(settings: Settings, *, plugins: Iterable[object] = ()) -> Services:
    """The services for ``settings``: core parts made here, then each of ``SERVICE_MODULES``
    installs its own. Nothing is opened until :meth:`Services.running`.

    :param plugins: extra plugin objects registered beside the installed ones (tests, embedding).
    """
    plugin_manager, registry = build_registry(settings, plugins)
    db = Database(settings.resolved_database_url)
    secrets = SecretBox(load_or_create_secrets(settings.secret_key, settings.data_dir))
    jobs = JobQueue(db)
    services = Services(
        settings=settings,
        plugin_manager=plugin_manager,
        registry=registry,
        db=db,
        secrets=secrets,
        signing_keys=SigningKeys(db, secrets),
        jobs=jobs,
        cron=CronRegistry(jobs),
        rate_limiter=RateLimiter(storage_for(db, settings.redis_url)),
        outbound=Outbound(allow_insecure=settings.allow_insecure_targets, limits=settings.outbound),
    )
    for module_name in SERVICE_MODULES:
        importlib.import_module(module_name).install(services)
    return services
