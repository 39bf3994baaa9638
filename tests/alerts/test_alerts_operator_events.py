"""Operator events reach the alert channels as events of their own: a connection refused for good
(``invalid_grant`` from a local fake OAuth provider), a webhook subscription disabled (its endpoint
answered 410), and a job kind failing repeatedly; delivered to a local SMTP server (aiosmtpd) and
local webhook and chat receivers, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from patchbay.core.alerts import operator_events
from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.models import Connection
from patchbay.core.flows.testing import drain
from patchbay.core.jobs.models import Job
from patchbay.core.settings import SmtpSettings
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import new_id, utcnow
from patchbay.providers.meta.testing import meta_signature, page_event_payload
from patchbay.testing import add_connection


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CONNECTIONS = Path(__file__).parent.parent / "connections"
fake_provider = _load("patchbay_tests_fake_provider", CONNECTIONS / "fake_provider.py")
oauth_steps = _load("patchbay_tests_connections_oauth", CONNECTIONS / "test_connections_oauth.py")


@pytest.fixture
async def fake():
    server = fake_provider.FakeProvider()
    await server.start()
    yield server
    await server.stop()


async def subscribe(client, headers, channel, target, events):
    response = await client.post("/connect/v1/alerts", json={"channel": channel, "target": target, "eventTypes": events}, headers=headers)
    assert response.status == 201, await response.text()


async def test_a_connection_refused_for_good_reaches_email_webhook_and_chat(aiohttp_client, make_app, database_url, fake, receivers, smtp_server):
    port, mailbox = smtp_server
    app_ = make_app(
        database_url=database_url,
        plugins=[fake_provider.FakePack(fake.base)],
        providers=fake_provider.provider_settings(),
        smtp=SmtpSettings(host="127.0.0.1", port=port, sender="alerts@patchbay.test"),
    )
    api = await aiohttp_client(app_)
    app = api.server.app
    ws = await create_workspace_with_key(app, plan="enterprise")
    other = await create_workspace_with_key(app, name="Other", plan="enterprise")
    receiver = await receivers()
    await subscribe(api, ws["headers"], "webhook", receiver.url + "/hook", ["connection.invalid"])
    await subscribe(api, ws["headers"], "chat", receiver.url + "/chat", ["connection.invalid"])
    await subscribe(api, ws["headers"], "email", "ops@example.com", ["connection.invalid"])
    await subscribe(api, ws["headers"], "webhook", receiver.url + "/flows-only", ["flow.failed"])
    await subscribe(api, other["headers"], "webhook", receiver.url + "/other-tenant", ["connection.invalid"])

    connection_id = await oauth_steps.connect_oauth(api, ws)
    fake.refresh_error = "temporarily_unavailable"
    await api.post(f"/auth/fakeoauth/refresh/{ws['workspace_id']}", headers=ws["headers"])
    await drain(app[SERVICES])
    assert receiver.requests == [] and mailbox.messages == [], "a passing failure is not an operator event"

    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(Connection).values(refresh_retry_at=None))
    fake.refresh_error = "invalid_grant"
    await api.post(f"/auth/fakeoauth/refresh/{ws['workspace_id']}", headers=ws["headers"])
    await drain(app[SERVICES])

    by_path = {r["path"]: json.loads(r["body"]) for r in receiver.requests}
    assert set(by_path) == {"/hook", "/chat"}
    alert = by_path["/hook"]
    assert set(alert) == {"event", "timestamp", "workspaceId", "summary", "details"}
    assert alert["event"] == "connection.invalid" and alert["workspaceId"] == ws["workspace_id"]
    assert alert["details"]["connectionId"] == connection_id and alert["details"]["provider"] == "fakeoauth"
    assert connection_id in alert["summary"] and alert["timestamp"].endswith("Z")
    assert by_path["/chat"]["text"].startswith("\u26a0") and connection_id in by_path["/chat"]["text"]
    await asyncio.wait_for(mailbox.arrived.wait(), 10)
    ((recipients, message),) = mailbox.messages
    assert recipients == ["ops@example.com"] and "needs reconnecting" in message["Subject"]
    assert connection_id in message.get_payload(decode=True).decode()

    receiver.requests.clear()
    await api.post(f"/auth/fakeoauth/refresh/{ws['workspace_id']}", headers=ws["headers"])
    await drain(app[SERVICES])
    assert receiver.requests == [], "an invalid connection is told once"


async def test_a_disabled_webhook_subscription_is_told(database_url, aiohttp_client, wh_app, receivers, helpers):
    # database_url before aiohttp_client: fixtures end in reverse order, so the app and its job
    # workers stop before the test's PostgreSQL database is dropped (dropped first, a worker still
    # marking jobs done met its terminated connection: "another operation is in progress")
    client = await aiohttp_client(wh_app(database_url=database_url))
    app = client.server.app
    ws = await create_workspace_with_key(app, name="First")
    alerts = await receivers()
    gone = await receivers([410])
    await subscribe(client, ws["headers"], "webhook", alerts.url + "/hook", ["webhook.subscription_disabled"])
    await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    created = await client.post(
        "/connect/v1/webhooks/facebook/subscribe",
        json={"callbackUrl": gone.url, "eventType": "*", "callbackSecret": "customer-callback-secret"},
        headers=ws["headers"],
    )
    assert created.status == 201, await created.text()
    subscription = await created.json()
    body = json.dumps(page_event_payload("page-A", value={"n": 1})).encode()
    assert (await client.post("/webhook/facebook", data=body, headers={"x-hub-signature-256": meta_signature("meta-app-secret", body)})).status == 200

    await alerts.wait_for(1, timeout=20)
    alert = json.loads(alerts.requests[0]["body"])
    assert alert["event"] == "webhook.subscription_disabled" and alert["workspaceId"] == ws["workspace_id"]
    assert alert["details"]["subscriptionId"] == subscription["subscriptionId"] and "410" in alert["details"]["reason"]
    assert alert["details"]["url"] == gone.url


async def _fail_jobs(app, kind: str, workspace_id: str | None, count: int, *, age_seconds: float = 0) -> None:
    at = utcnow() - timedelta(seconds=age_seconds)
    async with app[SERVICES].db.transaction() as session:
        for n in range(count):
            session.add(
                Job(
                    id=new_id(),
                    kind=kind,
                    payload={},
                    status="failed",
                    attempts=5,
                    max_attempts=5,
                    workspace_id=workspace_id,
                    last_error=f"upstream said no ({n})",
                    created_at=at,
                    updated_at=at,
                )
            )


@pytest.mark.both_databases
@pytest.mark.slow  # about 2 s (setup and call)
async def test_a_job_kind_failing_repeatedly_is_told_once_per_window(aiohttp_client, make_app, database_url, receivers):
    client = await aiohttp_client(make_app(database_url=database_url))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    other = await create_workspace_with_key(app, name="Other")
    receiver = await receivers()
    await subscribe(client, ws["headers"], "webhook", receiver.url + "/mine", ["jobs.failing"])
    await subscribe(client, other["headers"], "webhook", receiver.url + "/other", ["jobs.failing"])
    threshold = operator_events.FAILING_THRESHOLD
    await _fail_jobs(app, "crm_push.sync", ws["workspace_id"], threshold)
    await _fail_jobs(app, "records.sync", ws["workspace_id"], threshold - 1)  # below the threshold
    await _fail_jobs(app, "leads.import", ws["workspace_id"], threshold, age_seconds=operator_events.FAILING_WINDOW_SECONDS + 60)  # too old
    await _fail_jobs(app, "alerts.deliver", ws["workspace_id"], threshold)  # the alerts themselves
    await _fail_jobs(app, "cron:maintenance", None, threshold)  # the deployment's own job

    assert await operator_events.check_job_failures(app[SERVICES]) == {"failingKinds": 2, "told": 2}
    await drain(app[SERVICES])
    received = sorted((r["path"], json.loads(r["body"])["details"]["kind"]) for r in receiver.requests)
    assert received == [("/mine", "crm_push.sync"), ("/mine", "cron:maintenance"), ("/other", "cron:maintenance")]
    mine = next(json.loads(r["body"]) for r in receiver.requests if r["path"] == "/mine" and b"crm_push" in r["body"])
    assert mine["details"]["failed"] == threshold and mine["details"]["lastError"].startswith("upstream said no")
    deployment = next(json.loads(r["body"]) for r in receiver.requests if r["path"] == "/other")
    assert deployment["workspaceId"] is None and "lastError" not in deployment["details"]

    receiver.requests.clear()
    assert (await operator_events.check_job_failures(app[SERVICES]))["told"] == 0
    await drain(app[SERVICES])
    assert receiver.requests == []
    async with app[SERVICES].db.session() as session:
        assert await session.scalar(select(func.count()).select_from(Job).where(Job.kind == operator_events.FANOUT_JOB)) == 2


async def test_operator_event_types_are_offered_and_validated(aiohttp_client, make_app, receivers):
    client = await aiohttp_client(make_app())
    ws = await create_workspace_with_key(client.server.app)
    receiver = await receivers()
    created = await client.post(
        "/connect/v1/alerts", json={"channel": "webhook", "target": receiver.url, "eventTypes": ["jobs.failing", "flow.failed"]}, headers=ws["headers"]
    )
    assert created.status == 201 and (await created.json())["eventTypes"] == ["jobs.failing", "flow.failed"]
    refused = await client.post(
        "/connect/v1/alerts", json={"channel": "webhook", "target": receiver.url, "eventTypes": ["jobs.exploded"]}, headers=ws["headers"]
    )
    assert refused.status == 400
    assert "connection.invalid" in (await refused.json())["message"]
