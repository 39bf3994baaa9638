"""A processing job's events handled in one pass: several tenants routed together without crossing,
one bad event not failing the others, duplicate semantics kept, a second run changing nothing."""

from __future__ import annotations

import json

from sqlalchemy import event, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.models import FlowExecution
from patchbay.core.jobs.models import Job
from patchbay.core.jobs.queue import JobContext
from patchbay.core.leads.models import Lead
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks import batch
from patchbay.core.webhooks.delivery import deliver_batch_job
from patchbay.core.webhooks.models import WebhookDelivery, WebhookSubscription
from patchbay.core.webhooks.processing import process_job
from patchbay.core.webhooks.signing import generate_secret
from patchbay.providers.meta.testing import leadgen_payload, meta_signature, page_event_payload
from patchbay.testing import add_connection

APP_SECRET = "meta-app-secret"


async def _post(client, payload=None, raw: bytes | None = None) -> str:
    body = raw if raw is not None else json.dumps(payload).encode()
    response = await client.post("/webhook/facebook", data=body, headers={"x-hub-signature-256": meta_signature(APP_SECRET, body)})
    assert response.status == 200
    return (await response.json())["id"]


async def _run(app, event_ids: list[str]) -> dict:
    return await process_job(JobContext(app[SERVICES], "job", "webhooks.process", {"event_ids": event_ids}, 1, 10, None))


async def _setup(wh_app, aiohttp_client):
    """An app without workers (the test runs the processing job) and two workspaces, each with a
    page connection and a subscription."""
    client = await aiohttp_client(wh_app(background=False))
    app = client.server.app
    workspaces = []
    for name, page in (("First", "page-A"), ("Second", "page-B")):
        ws = await create_workspace_with_key(app, name=name)
        connection_id = await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": page}, credentials={"access_token": "page-token"})
        async with app[SERVICES].db.transaction(tenant=ws["workspace_id"]) as session:
            session.add(WebhookSubscription(provider="facebook", url=f"http://127.0.0.1:9/{name}", events=["*"]))
        workspaces.append({**ws, "connection_id": connection_id})
    return client, app, workspaces


async def _rows(app, model, **where):
    async with app[SERVICES].db.session() as session:
        return list((await session.scalars(select(model).filter_by(**where))).all())


async def test_a_batch_of_several_tenants_is_routed_in_one_pass_without_crossing(wh_app, aiohttp_client, helpers):
    client, app, (first, second) = await _setup(wh_app, aiohttp_client)
    ids = {}
    for n in range(6):
        page = ("page-A", "page-B")[n % 2]
        ids[n] = (page, await _post(client, page_event_payload(page, value={"n": n})))
    unknown = await _post(client, page_event_payload("page-unknown"))
    outcome = await _run(app, [event_id for _, event_id in ids.values()] + [unknown])
    assert outcome == {"processed": 7, "one_by_one": 1}  # only the unroutable event went one by one
    owner = {"page-A": first, "page-B": second}
    events = {row.id: row for row in await helpers.event_rows(app)}
    for page, event_id in ids.values():
        row = events[event_id]
        assert (row.status, row.workspace_id, row.connection_id) == ("PROCESSED", owner[page]["workspace_id"], owner[page]["connection_id"])
        (delivery,) = await _rows(app, WebhookDelivery, event_id=event_id)
        subscription = (await _rows(app, WebhookSubscription, id=delivery.subscription_id))[0]
        assert delivery.workspace_id == subscription.workspace_id == owner[page]["workspace_id"]
    assert events[unknown].status == "FAILED" and "page_id=page-unknown" in events[unknown].reason
    jobs = await _rows(app, Job, kind="webhooks.deliver_batch")
    assert sorted((job.workspace_id, len(job.payload["delivery_ids"])) for job in jobs) == sorted([(first["workspace_id"], 3), (second["workspace_id"], 3)])
    # each workspace's log lists its own events only
    for ws, page in ((first, "page-A"), (second, "page-B")):
        listed = await (await client.get("/connect/v1/webhooks/events", headers=ws["headers"])).json()
        assert sorted(e["id"] for e in listed["data"]) == sorted(event_id for p, event_id in ids.values() if p == page)


async def test_a_failing_event_in_a_batch_does_not_fail_the_others(wh_app, aiohttp_client, helpers):
    client, app, _ = await _setup(wh_app, aiohttp_client)

    async def listener(session, event):
        if event.payload.get("n") == 1:
            raise ValueError("a listener bug")

    app[SERVICES].webhook_listeners.add(listener)
    ids = [await _post(client, page_event_payload("page-A", value={"n": n})) for n in range(3)]
    bad = await _post(client, raw=b"not json")
    await _run(app, [*ids, bad])
    events = {row.id: row for row in await helpers.event_rows(app)}
    assert [events[event_id].status for event_id in ids] == ["PROCESSED", "FAILED", "PROCESSED"]
    assert "a listener bug" in events[ids[1]].reason
    assert events[bad].status == "FAILED" and events[bad].reason == "the body is not valid JSON"
    assert sorted(d.event_id for d in await _rows(app, WebhookDelivery)) == sorted([ids[0], ids[2]])


async def test_duplicates_in_one_batch_keep_their_meaning(wh_app, aiohttp_client, graph, helpers):
    client, app, (first, _) = await _setup(wh_app, aiohttp_client)
    graph.add_lead("lead-1", email="A@Example.com", name="Ada Lovelace")
    same = page_event_payload("page-A", value={"same": True})
    copies = [await _post(client, same), await _post(client, same)]
    lead_events = [await _post(client, leadgen_payload("page-A", "lead-1")), await _post(client, leadgen_payload("page-A", "lead-1", form_id="form-2"))]
    await _run(app, copies + lead_events)
    events = {row.id: row for row in await helpers.event_rows(app)}
    assert [events[event_id].status for event_id in copies] == ["PROCESSED", "DUPLICATE"]
    assert "received before" in events[copies[1]].reason
    assert [events[event_id].status for event_id in lead_events] == ["PROCESSED", "DUPLICATE"]
    assert f"(lead-1) was received before as event {lead_events[0]}" in events[lead_events[1]].reason
    (lead,) = await _rows(app, Lead)
    assert (lead.workspace_id, lead.email, lead.event_id) == (first["workspace_id"], "a@example.com", lead_events[0])
    assert events[lead_events[0]].lead_id == lead.id and events[lead_events[0]].payload["lead"]["email"] == "a@example.com"
    assert sorted(d.event_id for d in await _rows(app, WebhookDelivery)) == sorted([copies[0], lead_events[0]])


async def test_running_a_batch_again_changes_nothing(wh_app, aiohttp_client, helpers):
    client, app, _ = await _setup(wh_app, aiohttp_client)
    ids = [await _post(client, page_event_payload(page, value={"n": n})) for n, page in enumerate(("page-A", "page-B", "page-A"))]
    await _run(app, ids)
    before = sorted((d.id, d.event_id) for d in await _rows(app, WebhookDelivery))
    await _run(app, ids)  # a job re-run after a crash between its commit and being marked done
    assert sorted((d.id, d.event_id) for d in await _rows(app, WebhookDelivery)) == before
    assert len(before) == 3 and len(await _rows(app, Job, kind="webhooks.deliver_batch")) == 2


async def _flow_on_leadgen(client, headers, *, publish: bool = True) -> str:
    steps = [{"id": "t", "type": "transform", "output": "{{ trigger.leadgen_id }}"}]
    flow = await (await client.post("/connect/v1/flows", json={"name": "on lead", "steps": steps}, headers=headers)).json()
    if publish:
        assert (await client.post(f"/connect/v1/flows/{flow['id']}/publish", headers=headers)).status == 201
    trigger = {"providerType": "facebook", "triggerName": "leadgen", "kind": "webhook"}
    assert (await client.post(f"/connect/v1/flows/{flow['id']}/triggers", json=trigger, headers=headers)).status == 201
    return flow["id"]


async def test_a_batch_of_several_tenants_starts_each_matching_flow_once_with_one_lookup(wh_app, aiohttp_client, graph):
    client, app, (first, second) = await _setup(wh_app, aiohttp_client)
    first_flow = await _flow_on_leadgen(client, first["headers"])
    second_flow = await _flow_on_leadgen(client, second["headers"])
    draft = await _flow_on_leadgen(client, second["headers"], publish=False)
    leads = {"lead-1": "page-A", "lead-2": "page-A", "lead-3": "page-B"}
    for lead_id in leads:
        graph.add_lead(lead_id, email=f"{lead_id}@example.com")
    ids = [await _post(client, leadgen_payload(page, lead_id)) for lead_id, page in leads.items()]
    lookups = []

    def count(conn, cursor, statement, parameters, context, executemany):
        if "FROM flow_trigger_subscriptions" in statement:
            lookups.append(statement)

    event.listen(app[SERVICES].db.engine.sync_engine, "before_cursor_execute", count)
    try:
        assert (await _run(app, ids))["one_by_one"] == 0
    finally:
        event.remove(app[SERVICES].db.engine.sync_engine, "before_cursor_execute", count)
    assert len(lookups) == 1
    await _run(app, ids)  # a re-run starts nothing twice
    started = sorted((e.flow_id, e.workspace_id, e.trigger_payload["leadgen_id"]) for e in await _rows(app, FlowExecution))
    expected = [(first_flow, first["workspace_id"], "lead-1"), (first_flow, first["workspace_id"], "lead-2"), (second_flow, second["workspace_id"], "lead-3")]
    assert started == sorted(expected) and draft not in {flow for flow, _, _ in started}


async def _one_subscriber(wh_app, aiohttp_client, receivers, secret: str | None = None):
    """An app without workers, one workspace with a page connection and a subscription (signed with
    ``secret`` if given) to a local receiver."""
    receiver = await receivers()
    client = await aiohttp_client(wh_app(background=False))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    async with app[SERVICES].db.transaction(tenant=ws["workspace_id"]) as session:
        session.add(WebhookSubscription(provider="facebook", url=receiver.url, events=["*"], secret=app[SERVICES].secrets.encrypt(secret) if secret else None))
    return client, app, receiver


async def test_first_attempts_are_made_by_the_pass_and_a_crash_before_them_leaves_them_to_the_delayed_job(wh_app, aiohttp_client, receivers, monkeypatch):
    client, app, receiver = await _one_subscriber(wh_app, aiohttp_client, receivers)
    first = [await _post(client, page_event_payload("page-A", value={"n": n})) for n in range(3)]
    await _run(app, first)
    assert sorted(r["headers"]["X-Connect-Delivery"] for r in receiver.requests) == sorted(first)  # no job ran
    (backing,) = await _rows(app, Job, kind="webhooks.deliver_batch")
    assert backing.status == "done" and backing.run_at > utcnow()  # finished by the pass before it was due

    async def killed_after_commit(app, pending, safety_jobs):  # the process dies before the POSTs
        return None

    monkeypatch.setattr(batch, "forward_at_once", killed_after_commit)
    second = [await _post(client, page_event_payload("page-A", value={"n": n})) for n in range(3, 5)]
    await _run(app, second)
    assert len(receiver.requests) == 3
    (job,) = [job for job in await _rows(app, Job, kind="webhooks.deliver_batch") if job.status == "queued"]
    for _ in range(2):  # the delayed job, and a re-run of it after a crash
        await deliver_batch_job(JobContext(app[SERVICES], job.id, job.kind, job.payload, 1, 3, job.workspace_id))
    assert sorted(r["headers"]["X-Connect-Delivery"] for r in receiver.requests) == sorted(first + second)
    assert {d.status for d in await _rows(app, WebhookDelivery)} == {"succeeded"}


async def test_a_pass_decrypts_a_subscriptions_secret_once_and_signs_every_event_with_it(wh_app, aiohttp_client, receivers, monkeypatch):
    from standardwebhooks.webhooks import Webhook

    secret = generate_secret()
    client, app, receiver = await _one_subscriber(wh_app, aiohttp_client, receivers, secret)
    ids = [await _post(client, page_event_payload("page-A", value={"n": n})) for n in range(5)]
    decrypted = []
    box = app[SERVICES].secrets
    monkeypatch.setattr(box, "decrypt", lambda token, decrypt=box.decrypt: decrypted.append(token) or decrypt(token))
    await _run(app, ids)
    assert len(decrypted) == 1
    verified = [Webhook(secret).verify(r["body"], {k.lower(): v for k, v in r["headers"].items()})["id"] for r in receiver.requests]
    assert sorted(verified) == sorted(ids)
