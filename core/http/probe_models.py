"""What ``/``, the health probes and the cron routes answer (``core.http.root``, ``core.http.cron``)."""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from patchbay.core.http.responses import response_model


@response_model
class ServiceInfo:
    """``GET /``: what this service is and where its interfaces live."""

    name: str
    connectApi: str
    issuer: str
    discovery: str
    openapi: str
    providers: int


@response_model
class PluginLoadError:
    """A plugin left out as broken (``[plugins] skip_broken``)."""

    plugin: str
    distribution: str
    error: str


@response_model
class Health(TypedDict):
    """``GET /health`` when the database answers; ``pluginErrors`` only when ``degraded``."""

    status: Literal["ok", "degraded"]
    database: str
    pluginErrors: NotRequired[list[PluginLoadError]]


@response_model
class Unhealthy:
    """``GET /health`` when the database does not answer: the error's type."""

    status: Literal["error"]
    database: str


@response_model
class ProbeOk:
    """A probe that passed."""

    status: Literal["ok"]


@response_model
class ProbeUnavailable:
    """A readiness probe that failed, and why."""

    status: Literal["unavailable"]
    reason: str


@response_model
class CronRun:
    """A periodic job run now: its name and the summary it returned."""

    job: str
    ok: bool
    result: dict[str, Any]
