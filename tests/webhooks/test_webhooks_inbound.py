"""Inbound provider webhooks: handshake, signatures, durable storage before the 200, routing to the
owning workspace only, duplicates, and the hand-over to listeners."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from patchbay.core.appkeys import SERVICES
from patchbay.core.jobs.models import Job
from patchbay.core.jobs.queue import JobContext
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks.models import WebhookDelivery, WebhookEvent
from patchbay.core.webhooks.processing import TransientProcessingError, process_job
from patchbay.providers.meta.testing import meta_signature, page_event_payload
from patchbay.testing import add_connection

APP_SECRET = "meta-app-secret"


def signed(payload) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload).encode()
    return body, {"x-hub-signature-256": meta_signature(APP_SECRET, body), "Content-Type": "application/json"}


async def test_handshake_echoes_the_challenge_only_with_the_verify_token(wh):
    client, *_ = wh
    ok = await client.get("/webhook/facebook", params={"hub.mode": "subscribe", "hub.verify_token": "verify-me", "hub.challenge": "12345"})
    assert ok.status == 200
    assert await ok.text() == "12345"
    assert ok.content_type == "text/plain"
    wrong = await client.get("/webhook/facebook", params={"hub.mode": "subscribe", "hub.verify_token": "nope", "hub.challenge": "12345"})
    assert wrong.status == 403
    unknown = await client.get("/webhook/nosuchprovider", params={"hub.mode": "subscribe"})
    assert unknown.status == 404


async def test_unsigned_or_wrongly_signed_events_are_refused_and_nothing_is_stored(wh, helpers):
    client, app, first, _ = wh
    await add_connection(app, first["workspace_id"], "facebook", meta={"page_id": "p1"})
    body, headers = signed(page_event_payload("p1"))
    missing = await client.post("/webhook/facebook", data=body, headers={"Content-Type": "application/json"})
    assert missing.status == 401
    assert (await missing.json()) == {
        "statusCode": 401,
        "message": "Unauthorized: the request's signature is missing or does not match the webhook secret configured for facebook",
    }
    wrong = await client.post("/webhook/facebook", data=body, headers={"x-hub-signature-256": meta_signature("other-secret", body)})
    assert wrong.status == 401
    tampered = await client.post("/webhook/facebook", data=body + b" ", headers=headers)
    assert tampered.status == 401
    assert await helpers.count(app, WebhookEvent) == 0
    async with app[SERVICES].db.session() as session:
        assert await session.scalar(select(func.count()).select_from(Job).where(Job.kind == "webhooks.process")) == 0


async def test_an_event_that_cannot_be_stored_is_503_and_not_acknowledged(wh, helpers):
    client, app, first, _ = wh
    await add_connection(app, first["workspace_id"], "facebook", meta={"page_id": "p1"})
    await app[SERVICES].webhook_ingest.close()  # as when the process is shutting down
    body, headers = signed(page_event_payload("p1"))
    response = await client.post("/webhook/facebook", data=body, headers=headers)
    assert response.status == 503
    assert (await response.json()) == {"statusCode": 503, "message": "The event could not be stored; retry later"}
    assert await helpers.count(app, WebhookEvent) == 0


async def test_a_signed_event_is_committed_before_the_answer(wh_app, aiohttp_client, helpers):
    client = await aiohttp_client(wh_app(background=False))  # no workers: nothing is processed
    app = client.server.app
    body, headers = signed(page_event_payload("p1"))
    response = await client.post("/webhook/facebook", data=body, headers=headers)
    assert response.status == 200
    answer = await response.json()
    (row,) = await helpers.event_rows(app)
    assert row.id == answer["id"] and row.status == "RECEIVED" and row.body == body.decode()
    assert abs((utcnow() - row.created_at).total_seconds()) < 5 and row.workspace_id is None
    async with app[SERVICES].db.session() as session:
        job = await session.scalar(select(Job).where(Job.kind == "webhooks.process"))
    assert job.payload == {"event_ids": [row.id]}


async def test_events_are_routed_by_page_id_to_their_workspace_only(wh, helpers):
    client, app, first, second = wh
    await add_connection(app, first["workspace_id"], "facebook", meta={"page_id": "page-A"})
    await add_connection(app, second["workspace_id"], "facebook", meta={"page_id": "page-B"})
    for page in ("page-A", "page-B", "page-unknown"):
        body, headers = signed(page_event_payload(page, value={"message": page}))
        assert (await client.post("/webhook/facebook", data=body, headers=headers)).status == 200

    async def settled():
        rows = await helpers.event_rows(app)
        return rows if all(r.status != "RECEIVED" for r in rows) else None

    rows = {r.payload["message"]: r for r in await helpers.wait_until(settled)}
    assert rows["page-A"].workspace_id == first["workspace_id"] and rows["page-A"].status == "PROCESSED"
    assert rows["page-B"].workspace_id == second["workspace_id"] and rows["page-B"].status == "PROCESSED"
    assert rows["page-unknown"].workspace_id is None and rows["page-unknown"].status == "FAILED"
    assert "page_id=page-unknown" in rows["page-unknown"].reason
    # each workspace's log shows its own event only
    for ws, page in ((first, "page-A"), (second, "page-B")):
        listed = await (await client.get("/connect/v1/webhooks/events", headers=ws["headers"])).json()
        assert listed["total"] == 1 and [e["payload"]["message"] for e in listed["data"]] == [page]
    other = await client.get(f"/connect/v1/webhooks/events/{rows['page-A'].id}", headers=second["headers"])
    assert other.status == 404


async def test_unroutable_event_is_forwarded_nowhere(wh, receivers, helpers):
    client, app, first, _ = wh
    receiver = await receivers()
    await add_connection(app, first["workspace_id"], "facebook", meta={"page_id": "page-A"})
    created = await client.post("/connect/v1/webhooks/facebook/subscribe", json={"callbackUrl": receiver.url, "eventType": "*"}, headers=first["headers"])
    assert created.status == 201
    body, headers = signed(page_event_payload("page-Z"))
    assert (await client.post("/webhook/facebook", data=body, headers=headers)).status == 200
    await helpers.wait_until(lambda: _all_settled(helpers, app))
    assert await helpers.count(app, WebhookDelivery) == 0
    assert receiver.requests == []


async def _all_settled(helpers, app):
    rows = await helpers.event_rows(app)
    return bool(rows) and all(r.status != "RECEIVED" for r in rows)


async def test_explicit_connection_id_routes_but_only_to_a_connection_of_that_provider(wh, helpers):
    client, app, first, _ = wh
    connection_id = await add_connection(app, first["workspace_id"], "facebook", meta={})
    other_provider = await add_connection(app, first["workspace_id"], "hubspot", meta={})
    body, headers = signed(page_event_payload("no-such-page", value={"n": 1}))
    await client.post(f"/webhook/facebook?connectionId={connection_id}", data=body, headers=headers)
    body2, headers2 = signed(page_event_payload("no-such-page", value={"n": 2}))
    await client.post(f"/webhook/facebook?connectionId={other_provider}", data=body2, headers=headers2)
    await helpers.wait_until(lambda: _all_settled(helpers, app))
    rows = {r.payload["n"]: r for r in await helpers.event_rows(app)}
    assert rows[1].status == "PROCESSED" and rows[1].connection_id == connection_id
    assert rows[2].status == "FAILED" and rows[2].workspace_id is None


async def test_the_same_delivery_twice_is_a_duplicate_and_forwarded_once(wh, receivers, helpers):
    client, app, first, _ = wh
    receiver = await receivers()
    await add_connection(app, first["workspace_id"], "facebook", meta={"page_id": "page-A"})
    await client.post("/connect/v1/webhooks/facebook/subscribe", json={"url": receiver.url}, headers=first["headers"])
    body, headers = signed(page_event_payload("page-A"))
    for _ in range(2):
        assert (await client.post("/webhook/facebook", data=body, headers=headers)).status == 200
    await helpers.wait_until(lambda: _all_settled(helpers, app))
    statuses = sorted(r.status for r in await helpers.event_rows(app))
    assert statuses == ["DUPLICATE", "PROCESSED"]
    logged = await (await client.get("/connect/v1/webhooks/events", params={"status": "duplicate"}, headers=first["headers"])).json()
    assert logged["total"] == 1 and "received before" in logged["data"][0]["reason"]
    await receiver.wait_for(1)
    await helpers.wait_until(lambda: _deliveries_done(app))
    assert len(receiver.requests) == 1


async def _deliveries_done(app):
    async with app[SERVICES].db.session() as session:
        pending = await session.scalar(select(func.count()).select_from(WebhookDelivery).where(WebhookDelivery.status == "pending"))
    return pending == 0


async def test_a_body_with_several_events_is_split_and_each_routed(wh, helpers):
    client, app, first, second = wh
    await add_connection(app, first["workspace_id"], "facebook", meta={"page_id": "page-A"})
    await add_connection(app, second["workspace_id"], "facebook", meta={"page_id": "page-B"})
    payload = {
        "object": "page",
        "entry": [
            {"id": "page-A", "changes": [{"field": "feed", "value": {"n": 1}}]},
            {"id": "page-B", "changes": [{"field": "feed", "value": {"n": 2}}]},
        ],
    }
    body, headers = signed(payload)
    assert (await client.post("/webhook/facebook", data=body, headers=headers)).status == 200
    await helpers.wait_until(lambda: _count_settled(helpers, app, 2))
    rows = {r.payload["n"]: r for r in await helpers.event_rows(app)}
    assert rows[1].workspace_id == first["workspace_id"] and rows[2].workspace_id == second["workspace_id"]
    assert rows[2].parent_id == rows[1].id


async def _count_settled(helpers, app, n):
    rows = await helpers.event_rows(app)
    return len(rows) == n and all(r.status != "RECEIVED" for r in rows)


async def test_listeners_run_in_the_processing_transaction(wh_app, aiohttp_client, helpers):
    seen = []
    app = wh_app()

    async def listener(session, event):
        seen.append((event.id, event.workspace_id, event.provider, event.event_type, dict(event.payload), event.connection_id))
        assert session.in_transaction()

    app[SERVICES].webhook_listeners.add(listener)
    client = await aiohttp_client(app)
    from patchbay.core.testing import create_workspace_with_key

    ws = await create_workspace_with_key(app)
    connection_id = await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    body, headers = signed(page_event_payload("page-A", value={"k": "v"}))
    event_id = (await (await client.post("/webhook/facebook", data=body, headers=headers)).json())["id"]
    await helpers.wait_until(lambda: _all_settled(helpers, app))
    assert seen == [(event_id, ws["workspace_id"], "facebook", "feed", {"page_id": "page-A", "k": "v"}, connection_id)]


async def test_a_failing_listener_rolls_back_and_marks_the_event_failed(wh_app, aiohttp_client, receivers, helpers):
    app = wh_app()

    async def broken(session, event):
        raise ValueError("listener bug")

    app[SERVICES].webhook_listeners.add(broken)
    client = await aiohttp_client(app)
    from patchbay.core.testing import create_workspace_with_key

    ws = await create_workspace_with_key(app)
    receiver = await receivers()
    await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    await client.post("/connect/v1/webhooks/facebook/subscribe", json={"url": receiver.url}, headers=ws["headers"])
    body, headers = signed(page_event_payload("page-A"))
    await client.post("/webhook/facebook", data=body, headers=headers)
    await helpers.wait_until(lambda: _all_settled(helpers, app))
    (row,) = await helpers.event_rows(app)
    assert row.status == "FAILED" and "listener bug" in row.reason
    assert await helpers.count(app, WebhookDelivery) == 0


async def test_signed_bodies_that_carry_no_event_fail_with_a_reason(wh, helpers):
    client, app, *_ = wh
    for raw in (b"not json", b"null", b'{"object": "page", "entry": []}'):
        response = await client.post("/webhook/facebook", data=raw, headers={"x-hub-signature-256": meta_signature(APP_SECRET, raw)})
        assert response.status == 200
    await helpers.wait_until(lambda: _count_settled(helpers, app, 3))
    reasons = sorted(r.reason for r in await helpers.event_rows(app))
    assert reasons == ["the body carries no event", "the body carries no event", "the body is not valid JSON"]


async def _process_jobs(app) -> list[Job]:
    async with app[SERVICES].db.session() as session:
        return list((await session.scalars(select(Job).where(Job.kind == "webhooks.process"))).all())


@pytest.mark.slow  # about 1 s (setup and call)
async def test_a_database_hiccup_retries_the_event_and_a_bug_fails_it_with_its_reason(wh, helpers):
    client, app, first, _ = wh
    await add_connection(app, first["workspace_id"], "facebook", meta={"page_id": "page-A"})
    hiccups = []

    async def listener(session, event):
        if event.payload.get("n") == 1 and not hiccups:
            hiccups.append(event.id)
            raise OperationalError("UPDATE ...", {}, ConnectionResetError("connection lost"))
        if event.payload.get("n") == 2:
            raise ValueError("a listener bug")

    app[SERVICES].webhook_listeners.add(listener)
    for n in (1, 2):
        body, headers = signed(page_event_payload("page-A", value={"n": n}))
        assert (await client.post("/webhook/facebook", data=body, headers=headers)).status == 200
    await helpers.wait_until(lambda: _all_settled(helpers, app), timeout=30)
    rows = {json.loads(r.body)["entry"][0]["changes"][0]["value"]["n"]: r for r in await helpers.event_rows(app)}
    assert hiccups == [rows[1].id]
    assert rows[1].status == "PROCESSED" and rows[1].reason is None  # retried after the hiccup
    assert rows[2].status == "FAILED" and "a listener bug" in rows[2].reason
    jobs = await helpers.wait_until(lambda: _settled_jobs(app), timeout=30)
    retried = [job for job in jobs if job.payload["event_ids"] == [rows[1].id]]
    assert [(job.status, job.attempts) for job in retried] == [("done", 2)]
    failed_at_once = [job for job in jobs if job.payload["event_ids"] == [rows[2].id]]
    assert [(job.status, job.attempts) for job in failed_at_once] == [("done", 1)]


async def _settled_jobs(app):
    jobs = await _process_jobs(app)
    return jobs if jobs and all(job.status in ("done", "failed") for job in jobs) else None


async def test_a_transient_error_on_the_last_attempt_fails_the_event(wh_app, aiohttp_client, helpers):
    client = await aiohttp_client(wh_app(background=False))
    app = client.server.app
    first = await create_workspace_with_key(app)
    await add_connection(app, first["workspace_id"], "facebook", meta={"page_id": "page-A"})

    async def listener(session, event):
        raise OperationalError("UPDATE ...", {}, ConnectionResetError("connection lost"))

    app[SERVICES].webhook_listeners.add(listener)
    body, headers = signed(page_event_payload("page-A", value={"n": 1}))
    event_id = (await (await client.post("/webhook/facebook", data=body, headers=headers)).json())["id"]
    with pytest.raises(TransientProcessingError):
        await process_job(JobContext(app[SERVICES], "job", "webhooks.process", {"event_ids": [event_id]}, 1, 10, None))
    assert [r.status for r in await helpers.event_rows(app)] == ["RECEIVED"]
    await process_job(JobContext(app[SERVICES], "job", "webhooks.process", {"event_ids": [event_id]}, 10, 10, None))
    (row,) = await helpers.event_rows(app)
    assert row.status == "FAILED" and "connection lost" in row.reason
