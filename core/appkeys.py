"""Every typed key of the application's and the request's state, declared once."""

from __future__ import annotations

from typing import TYPE_CHECKING

import jinja2
import pluggy
from aiohttp import web

from patchbay.core.jobs.cron import CronRegistry
from patchbay.core.jobs.queue import JobQueue
from patchbay.core.outbound import Outbound
from patchbay.core.plugins.registry import Registry
from patchbay.core.ratelimit.limiter import RateLimiter
from patchbay.core.security.secrets import SecretBox
from patchbay.core.security.signing_keys import SigningKeys
from patchbay.core.settings import Settings
from patchbay.core.storage.db import Database

if TYPE_CHECKING:
    from patchbay.core.billing.limits import PlanLimits
    from patchbay.core.connections.runtime import ConnectionsRuntime
    from patchbay.core.http.metrics import Metrics
    from patchbay.core.http.root import Readiness
    from patchbay.core.security.auth import Principal

SERVICES = web.AppKey("services", "Services")  # patchbay.core.services: what every service needs
SETTINGS = web.AppKey("settings", Settings)
DB = web.AppKey("db", Database)
PLUGIN_MANAGER = web.AppKey("plugin_manager", pluggy.PluginManager)
REGISTRY = web.AppKey("registry", Registry)
SECRETS = web.AppKey("secrets", SecretBox)
SIGNING_KEYS = web.AppKey("signing_keys", SigningKeys)
JOBS = web.AppKey("jobs", JobQueue)
CRON = web.AppKey("cron", CronRegistry)
RATE_LIMITER = web.AppKey("rate_limiter", RateLimiter)
OUTBOUND = web.AppKey("outbound", Outbound)
LIMITS = web.AppKey("limits", "PlanLimits")  # patchbay.core.billing.limits
ERASERS = web.AppKey("erasers", dict)  # patchbay.core.compliance.service: name -> data eraser
CONNECTIONS = web.AppKey("connections", "ConnectionsRuntime")  # patchbay.core.connections.runtime
#: listeners called in the transaction that disconnects or deletes a connection (patchbay.core.connections.lifecycle)
CONNECTION_REMOVAL_LISTENERS = web.AppKey("connection_removal_listeners", "RemovalListeners")
FLOW_RUNNER = web.AppKey("flow_runner", "FlowRunner")  # patchbay.core.flows.engine
#: listeners called for every verified, routed inbound event (patchbay.core.webhooks.listeners)
WEBHOOK_LISTENERS = web.AppKey("webhook_listeners", "WebhookListeners")
#: the group-commit writer of inbound events (patchbay.core.webhooks.ingest)
WEBHOOK_INGEST = web.AppKey("webhook_ingest", "IngestWriter")
METRICS = web.AppKey("metrics", "Metrics")  # patchbay.core.http.metrics
READINESS = web.AppKey("readiness", "Readiness")  # patchbay.core.http.root
#: error shapes other than the connect API's, by path prefix (patchbay.core.http.errors.register_error_format)
ERROR_FORMATS = web.AppKey("error_formats", list)

#: the templates of the hosted connect page (patchbay.core.connect_ui.pages)
CONNECT_UI_JINJA = web.AppKey("connect_ui_jinja", jinja2.Environment)

PRINCIPAL = web.RequestKey("principal", object)  # Principal | None once authenticated
REQUEST_ID = web.RequestKey("request_id", str)
IDP_SESSION = web.RequestKey("idp_session", object)  # LiveSession | None once the cookie is looked up
