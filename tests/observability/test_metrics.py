"""``/metrics`` scraped as Prometheus would, and the liveness and readiness probes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import asyncpg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.models import Connection
from patchbay.core.flows.engine import create_executions
from patchbay.core.flows.testing import drain
from patchbay.core.jobs.models import Job
from patchbay.core.settings import MetricsSettings
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.webhooks.models import WebhookAttempt, WebhookDelivery

_spec = importlib.util.spec_from_file_location("patchbay_tests_fake_provider", Path(__file__).parent.parent / "connections" / "fake_provider.py")
fake_provider = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_provider)

#: every metric name docs/scaling.md documents (without the _total/_count/_bucket/_sum suffixes)
DOCUMENTED = {
    "patchbay_http_requests",
    "patchbay_http_request_duration_seconds",
    "patchbay_proxy_upstream_duration_seconds",
    "patchbay_jobs_queued",
    "patchbay_jobs_oldest_age_seconds",
    "patchbay_webhook_deliveries",
    "patchbay_webhook_delivery_attempts",
    "patchbay_flow_executions",
    "patchbay_connections",
    "patchbay_connections_refresh_failing",
}


SCRAPE_TOKEN = "scrape-token"


@pytest.fixture
def make_app(make_app):
    """Apps whose ``/metrics`` opens with :data:`SCRAPE_TOKEN`, as a Prometheus scrape config sends it."""

    def make(**options):
        return make_app(metrics=MetricsSettings(token=SCRAPE_TOKEN), **options)

    return make


def samples(text: str) -> dict[tuple[str, tuple], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def scrape(client) -> dict[tuple[str, tuple], float]:
    response = await client.get("/metrics", headers={"Authorization": f"Bearer {SCRAPE_TOKEN}"})
    assert response.status == 200
    assert response.content_type == "text/plain"
    return samples(await response.text())


async def test_requests_are_counted_by_route_template_and_status(client, workspace):
    headers = workspace["headers"]
    for _ in range(3):
        assert (await client.get("/connect/v1/connections/does-not-exist", headers=headers)).status == 404
    assert (await client.get("/connect/v1/providers")).status in (200, 401)
    assert (await client.get("/no/such/route/123")).status == 404

    found = await scrape(client)
    template = "/connect/v1/connections/{connectionId}"
    by_route = {labels: value for (name, labels), value in found.items() if name == "patchbay_http_requests_total"}
    matching = [
        value for labels, value in by_route.items() if dict(labels).get("status") == "404" and dict(labels)["route"].startswith("/connect/v1/connections/{")
    ]
    assert matching == [3.0], (template, by_route)
    assert by_route[(("method", "GET"), ("route", "unmatched"), ("status", "404"))] == 1.0
    assert not any("does-not-exist" in dict(labels)["route"] for labels in by_route)
    count = [
        value
        for (name, labels), value in found.items()
        if name == "patchbay_http_request_duration_seconds_count" and dict(labels)["route"].startswith("/connect/v1/connections/{")
    ]
    assert count == [3.0]


async def test_shared_state_gauges_come_from_the_database(client, workspace):
    app = client.server.app
    async with app[SERVICES].db.transaction() as session:
        app[SERVICES].jobs.enqueue(session, "webhooks.process", {"event_ids": []})
        app[SERVICES].jobs.enqueue(session, "webhooks.process", {"event_ids": []})
        session.add(Connection(workspace_id=workspace["workspace_id"], provider="stripe", status="invalid", credentials="x"))
    found = await scrape(client)
    assert found[("patchbay_jobs_queued", (("kind", "webhooks.process"),))] == 2
    assert found[("patchbay_jobs_oldest_age_seconds", (("kind", "webhooks.process"),))] >= 0
    assert found[("patchbay_connections", (("status", "invalid"),))] == 1
    async with app[SERVICES].db.transaction() as session:
        await session.execute(Job.__table__.delete().where(Job.kind == "webhooks.process"))
    found = await scrape(client)
    assert ("patchbay_jobs_queued", (("kind", "webhooks.process"),)) not in found


async def test_two_apps_in_one_process_count_apart(aiohttp_client, make_app):
    first = await aiohttp_client(make_app())
    second = await aiohttp_client(make_app())
    assert (await first.get("/livez")).status == 200
    ones = await scrape(first)
    others = await scrape(second)
    assert ones[("patchbay_http_requests_total", (("method", "GET"), ("route", "/livez"), ("status", "200")))] == 1
    assert ("patchbay_http_requests_total", (("method", "GET"), ("route", "/livez"), ("status", "200"))) not in others


@pytest.mark.parametrize("live, ready", [("/livez", "/readyz"), ("/health/live", "/health/ready")])
async def test_liveness_and_readiness(client, live, ready):
    assert (await client.get(live)).status == 200
    answer = await client.get(ready)
    assert answer.status == 200 and (await answer.json())["status"] == "ok"


async def test_a_stopping_process_is_not_ready_but_alive(client):
    client.server.app[SERVICES].readiness.accepting = False
    for path in ("/readyz", "/health/ready"):
        answer = await client.get(path)
        assert answer.status == 503 and (await answer.json())["reason"] == "starting or stopping"
    assert (await client.get("/health/live")).status == 200


@pytest.fixture
async def fake():
    server = fake_provider.FakeProvider()
    await server.start()
    yield server
    await server.stop()


async def test_every_documented_figure_is_exposed(aiohttp_client, make_app, database_url, fake):
    client = await aiohttp_client(make_app(database_url=database_url, plugins=[fake_provider.FakePack(fake.base)], providers=fake_provider.provider_settings()))
    app = client.server.app
    ws = await create_workspace_with_key(app, plan="enterprise")
    h = ws["headers"]
    connected = await client.post("/connect/v1/providers/fakekey/connect", json={"credentials": {"apiKey": "fake-api-key-123"}}, headers=h)
    assert connected.status == 201, await connected.text()
    connection_id = (await connected.json())["connectionId"]
    health_checks = (await scrape(client))[("patchbay_proxy_upstream_duration_seconds_count", (("provider", "fakekey"),))]  # connecting proves the key
    for _ in range(2):
        proxied = await client.post("/connect/v1/proxy/fakekey", json={"method": "GET", "path": "/me"}, headers={**h, "x-connection-id": connection_id})
        assert proxied.status == 200
    flow = await (await client.post("/connect/v1/flows", json={"name": "m", "steps": [{"id": "ok", "type": "transform", "output": 1}]}, headers=h)).json()
    await client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=h)
    async with app[SERVICES].db.transaction() as session:
        await create_executions(
            app[SERVICES],
            session,
            [{"workspace_id": ws["workspace_id"], "flow_id": flow["id"], "version": 1, "trigger_source": "webhook", "trigger_payload": {}}],
        )
    await drain(app[SERVICES])
    async with app[SERVICES].db.transaction() as session:
        for status in ("succeeded", "succeeded", "failed"):
            session.add(WebhookDelivery(workspace_id=ws["workspace_id"], event_id="e", subscription_id="s", status=status))
        for number, code in enumerate((500, None, 200), start=1):
            session.add(WebhookAttempt(workspace_id=ws["workspace_id"], delivery_id="d", number=number, status_code=code))
        session.add(Connection(workspace_id=ws["workspace_id"], provider="fakeoauth", status="expired", credentials="x", refresh_failures=2))
        app[SERVICES].jobs.enqueue(session, "webhooks.process", {"event_ids": []})

    found = await scrape(client)
    assert found[("patchbay_proxy_upstream_duration_seconds_count", (("provider", "fakekey"),))] == health_checks + 2
    assert found[("patchbay_flow_executions", (("status", "completed"),))] == 1
    assert found[("patchbay_jobs_queued", (("kind", "webhooks.process"),))] == 1
    assert found[("patchbay_webhook_deliveries", (("status", "succeeded"),))] == 2
    assert found[("patchbay_webhook_deliveries", (("status", "failed"),))] == 1
    assert found[("patchbay_webhook_delivery_attempts", (("outcome", "success"),))] == 1
    assert found[("patchbay_webhook_delivery_attempts", (("outcome", "failure"),))] == 2
    assert found[("patchbay_connections_refresh_failing", (("provider", "fakeoauth"),))] == 1
    exposed = {name for name, _labels in found}
    for name in DOCUMENTED:
        assert {name, f"{name}_total", f"{name}_count"} & exposed, name
    documented = (Path(__file__).parents[2] / "docs" / "scaling.md").read_text()
    for name in DOCUMENTED:
        assert f"`{name}`" in documented, f"{name} is not documented in docs/scaling.md"


async def test_readiness_fails_when_the_database_goes_away(aiohttp_client, make_app, pg_url):
    client = await aiohttp_client(make_app(database_url=pg_url))
    assert (await client.get("/readyz")).status == 200
    name = pg_url.rsplit("/", 1)[1]
    connection = await asyncpg.connect(pg_url.replace("postgresql+asyncpg://", "postgresql://").rsplit("/", 1)[0] + "/postgres")
    try:
        await connection.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    finally:
        await connection.close()
    response = await client.get("/readyz")
    assert response.status == 503
    assert (await response.json())["reason"].startswith("database")
    assert (await client.get("/livez")).status == 200


def test_request_and_upstream_figures_are_exposed_as_prometheus_client_would_count_them():
    """The traffic figures are counted in plain dicts and exposed at scrape time: the samples equal
    those of prometheus-client's own Counter and Histogram fed the same observations."""
    from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

    from patchbay.core.http.metrics import _LATENCY_BUCKETS, Metrics

    observations = [0.001, 0.005, 0.0051, 0.3, 0.3, 2.5, 31.0, 0.0]
    metrics = Metrics()
    oracle = CollectorRegistry()
    requests = Counter("patchbay_http_requests", "", ["method", "route", "status"], registry=oracle)
    latency = Histogram("patchbay_http_request_duration_seconds", "", ["method", "route"], buckets=_LATENCY_BUCKETS, registry=oracle)
    upstream = Histogram("patchbay_proxy_upstream_duration_seconds", "", ["provider"], buckets=_LATENCY_BUCKETS, registry=oracle)
    for index, seconds in enumerate(observations):
        status = 200 if index % 3 else 404
        metrics.observe_request("GET", "/items/{id}", status, seconds)
        requests.labels("GET", "/items/{id}", str(status)).inc()
        latency.labels("GET", "/items/{id}").observe(seconds)
        metrics.observe_upstream("github", seconds)
        upstream.labels("github").observe(seconds)

    def traffic(registry) -> dict:
        found = samples(generate_latest(registry).decode())
        return {key: value for key, value in found.items() if key[0].startswith(("patchbay_http", "patchbay_proxy")) and not key[0].endswith("_created")}

    mine = traffic(metrics.registry)
    assert mine == traffic(oracle)
    assert mine[("patchbay_http_request_duration_seconds_bucket", (("le", "0.005"), ("method", "GET"), ("route", "/items/{id}")))] == 3
    assert mine[("patchbay_proxy_upstream_duration_seconds_count", (("provider", "github"),))] == len(observations)
