"""``GET /metrics``: the process's figures in the Prometheus text format (prometheus-client).

Two kinds of figures:

- **This process's traffic**, counted as it happens: requests by method, route template and status,
  with a latency histogram, and the proxy's upstream latency per provider (observed where the proxy
  records its audit row: from the first send to the provider's answer, a refresh and one 429 retry
  included). Each process counts its
  own; Prometheus adds the processes up.
- **The shared state**, read from the database when scraped: queued jobs and the age of the oldest
  per kind, deliveries by status, attempts by outcome, flow executions by status, connections by
  status (refresh failures leave a connection ``expired`` or ``invalid``) and connections whose
  last refresh failed, by provider. Every process answers the
  same figures for these, so dashboards should take ``max`` over instances, not ``sum``.

Each app has its own ``CollectorRegistry``: several apps in one process (tests, embedding) never
share or collide on counters.

The figures span every workspace and a scrape runs six aggregate queries, so the main port answers
``/metrics`` only with ``Authorization: Bearer <[metrics] token>`` (401 without it) and, with no token
configured, not at all (404, as a route that does not exist). ``patchbay serve`` can also answer it
on a second address (``[metrics] listen``, :func:`listener`), without a token, for a scraper on a
private network.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString
from sqlalchemy import func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.models import Connection
from patchbay.core.flows.models import FlowExecution
from patchbay.core.http.bearer import bearer_matches, bearer_refusal
from patchbay.core.http.errors import not_found, unauthorized
from patchbay.core.http.responses import Media, returns
from patchbay.core.jobs.models import Job
from patchbay.core.settings import SettingsError, listen_address
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks.models import WebhookAttempt, WebhookDelivery

routes = web.RouteTableDef()

#: a route label for requests that matched no route, so that scanners cannot grow the label set
UNMATCHED = "unmatched"
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: the ``le`` label of each bucket, as Prometheus clients write it
_BUCKET_LABELS = (*(floatToGoString(bound) for bound in _LATENCY_BUCKETS), "+Inf")


class _Histograms:
    """Latency histograms of one metric, one per label tuple, kept as plain counts: an observation
    is a dict lookup, a bisect and two additions, on the event loop's thread, with no lock (the
    loop is the only writer, and a scrape reads on it too). Turned into Prometheus samples only when
    scraped."""

    def __init__(self, name: str, documentation: str, labels: list[str]) -> None:
        self.name, self.documentation, self.labels = name, documentation, labels
        #: label values -> [count per bucket (the last one +Inf), sum]
        self.series: dict[tuple, list] = {}

    def observe(self, labels: tuple, seconds: float) -> None:
        series = self.series.get(labels)
        if series is None:
            series = self.series[labels] = [[0] * (len(_LATENCY_BUCKETS) + 1), 0.0]
        series[0][bisect.bisect_left(_LATENCY_BUCKETS, seconds)] += 1
        series[1] += seconds

    def family(self) -> HistogramMetricFamily:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labels)
        for labels, (counts, total) in list(self.series.items()):
            cumulative = list(itertools.accumulate(counts))
            family.add_metric(list(labels), list(zip(_BUCKET_LABELS, cumulative, strict=True)), total)
        return family


class _Traffic:
    """The collector of this process's traffic: requests by method, route template and status,
    their latency, and the proxy's upstream latency per provider. An answer is one histogram
    observation keyed by method, route and status, instead of a labelled Prometheus counter and
    histogram (each takes a lock and walks its buckets); when ``/metrics`` is scraped, the request
    counts are each key's observations and the latency histogram of a method and route adds its
    statuses' up."""

    def __init__(self) -> None:
        #: every answer's latency by method, route and status (the status is not a label of the latency histogram exposed)
        self.answers = _Histograms("patchbay_http_request_duration_seconds", "Time to answer an HTTP request.", ["method", "route", "status"])
        self.upstream = _Histograms("patchbay_proxy_upstream_duration_seconds", "Time a provider took to answer a proxied call.", ["provider"])

    def collect(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        requests = CounterMetricFamily("patchbay_http_requests", "HTTP requests answered, by route template and status.", labels=["method", "route", "status"])
        latency = _Histograms(self.answers.name, self.answers.documentation, ["method", "route"])
        for (method, route, status), (counts, total) in list(self.answers.series.items()):
            requests.add_metric([method, route, str(status)], sum(counts))
            series = latency.series.setdefault((method, route), [[0] * len(counts), 0.0])
            series[0] = [mine + theirs for mine, theirs in zip(series[0], counts, strict=True)]
            series[1] += total
        yield requests
        yield latency.family()
        yield self.upstream.family()


class Metrics:
    """The metric objects of one app."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self._traffic = _Traffic()
        registry.register(self._traffic)
        self.jobs_queued = Gauge("patchbay_jobs_queued", "Jobs waiting or running, by kind (shared state).", ["kind"], registry=registry)
        self.jobs_oldest_age = Gauge(
            "patchbay_jobs_oldest_age_seconds", "Age of the oldest job waiting or running, by kind (shared state).", ["kind"], registry=registry
        )
        self.deliveries = Gauge("patchbay_webhook_deliveries", "Outbound webhook deliveries by status (shared state).", ["status"], registry=registry)
        self.attempts = Gauge(
            "patchbay_webhook_delivery_attempts", "Outbound webhook delivery attempts by outcome (shared state).", ["outcome"], registry=registry
        )
        self.executions = Gauge("patchbay_flow_executions", "Flow executions by status (shared state).", ["status"], registry=registry)
        self.connections = Gauge(
            "patchbay_connections", "Provider connections by status; expired and invalid ones failed to refresh (shared state).", ["status"], registry=registry
        )
        self.refresh_failing = Gauge(
            "patchbay_connections_refresh_failing", "Connections whose last token refresh failed, by provider (shared state).", ["provider"], registry=registry
        )

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self._traffic.answers.observe((method, route, status), seconds)

    def observe_upstream(self, provider: str, seconds: float) -> None:
        """A proxied call's time from its first send to the provider's answer."""
        self._traffic.upstream.observe((provider,), seconds)

    async def read_shared_state(self, db) -> None:
        """Set the shared-state gauges from the database (one grouped query per table)."""
        now = utcnow()
        async with db.session() as session:
            jobs = (
                await session.execute(select(Job.kind, func.count(), func.min(Job.created_at)).where(Job.status.in_(("queued", "running"))).group_by(Job.kind))
            ).all()
            deliveries = (await session.execute(select(WebhookDelivery.status, func.count()).group_by(WebhookDelivery.status))).all()
            succeeded, tried = (
                await session.execute(select(func.count().filter(WebhookAttempt.status_code.between(200, 299)), func.count()).select_from(WebhookAttempt))
            ).one()
            executions = (await session.execute(select(FlowExecution.status, func.count()).group_by(FlowExecution.status))).all()
            connections = (await session.execute(select(Connection.status, func.count()).group_by(Connection.status))).all()
            failing = (
                await session.execute(
                    select(Connection.provider, func.count())
                    .where(Connection.refresh_failures > 0, Connection.status != "disconnected")
                    .group_by(Connection.provider)
                )
            ).all()
        for gauge in (self.jobs_queued, self.jobs_oldest_age, self.deliveries, self.attempts, self.executions, self.connections, self.refresh_failing):
            gauge.clear()
        for kind, count, oldest in jobs:
            self.jobs_queued.labels(kind).set(count)
            self.jobs_oldest_age.labels(kind).set(max(0.0, (now - _aware(oldest, now)).total_seconds()))
        for status, count in deliveries:
            self.deliveries.labels(status).set(count)
        if tried:
            self.attempts.labels("success").set(succeeded)
            self.attempts.labels("failure").set(tried - succeeded)
        for status, count in executions:
            self.executions.labels(status).set(count)
        for status, count in connections:
            self.connections.labels(status).set(count)
        for provider, count in failing:
            self.refresh_failing.labels(provider).set(count)


def _aware(moment: datetime, now: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=now.tzinfo)


def _route_of(request: web.Request) -> str:
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else UNMATCHED


def count_answer(services, request: web.Request, status: int, seconds: float) -> None:
    """Count an answer, the error envelope's included, by the route template (never the raw path:
    ids would make a label per resource)."""
    services.metrics.observe_request(request.method, _route_of(request), status, seconds)


#: the Prometheus text exposition format (0.0.4), sent as ``text/plain``
PROMETHEUS_TEXT = Media("text/plain", {"type": "string", "description": "Prometheus text exposition format 0.0.4"})


@routes.get("/metrics")
@returns(PROMETHEUS_TEXT)
async def metrics(request: web.Request) -> web.Response:
    """Prometheus text exposition of this process's figures and the shared state; needs
    ``Authorization: Bearer <[metrics] token>`` (401), and answers 404 when no token is configured."""
    token = request.app[SERVICES].settings.metrics.token
    if not token:
        raise not_found()
    if not bearer_matches(request, token):
        raise unauthorized(bearer_refusal(request, token, setting="`[metrics] token` (PATCHBAY_METRICS_TOKEN)"))
    return await _exposition(request.app)


async def _exposition(app: web.Application) -> web.Response:
    collected = app[SERVICES].metrics
    await collected.read_shared_state(app[SERVICES].db)
    response = web.Response(body=generate_latest(collected.registry))
    response.content_type = CONTENT_TYPE_LATEST.split(";")[0]
    return response


def listener(address: str) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context for the main app: while it runs, ``address`` (``host:port``) answers
    ``GET /metrics`` of that app without a token, and nothing else (404)."""
    host, port = listen_address(address)

    async def metrics_listener(app: web.Application) -> AsyncIterator[None]:
        async def open_metrics(_request: web.Request) -> web.Response:
            return await _exposition(app)

        side = web.Application()
        side.router.add_get("/metrics", open_metrics)
        runner = web.AppRunner(side, access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as error:
            await runner.cleanup()
            raise SettingsError(f"PATCHBAY_METRICS_LISTEN: cannot listen on {address}: {error.strerror or error}") from None
        yield
        await runner.cleanup()

    return metrics_listener


def setup(app: web.Application) -> None:
    app[SERVICES].metrics = Metrics()  # the request pipeline and the services record through it
    app.router.add_routes(routes)
