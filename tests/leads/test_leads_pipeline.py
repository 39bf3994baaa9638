"""Leads from Meta leadgen events: fetched through the page's connection, cleaned, deduplicated,
forwarded, listed, imported page by page, and pushed to a CRM (a local fake CRM API)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.crm_push.service import retry_failed_syncs
from patchbay.core.jobs.queue import JobContext
from patchbay.core.leads.imports import import_job
from patchbay.core.leads.models import Lead, LeadImport
from patchbay.core.leads.store import clean_lead, normalize_email, normalize_phone
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.webhooks.models import WebhookDelivery, WebhookEvent
from patchbay.core.webhooks.protocol import LeadData
from patchbay.providers.hubspot.testing import FakeCrm
from patchbay.providers.meta.testing import leadgen_payload, meta_signature
from patchbay.testing import add_connection

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)

APP_SECRET = "meta-app-secret"


async def send(client, payload):
    body = json.dumps(payload).encode()
    response = await client.post("/webhook/facebook", data=body, headers={"x-hub-signature-256": meta_signature(APP_SECRET, body)})
    assert response.status == 200
    return (await response.json())["id"]


async def settled(helpers, app, n=None):
    async def check():
        rows = await helpers.event_rows(app)
        return rows if rows and (n is None or len(rows) == n) and all(r.status != "RECEIVED" for r in rows) else None

    return await helpers.wait_until(check)


@pytest.fixture
async def crm():
    server = await FakeCrm().start()
    yield server
    await server.close()


@pytest.fixture
async def leads_env(aiohttp_client, wh_app, crm, graph):
    client = await aiohttp_client(wh_app(providers={"hubspot": {"api_base_url": crm.url}}))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    page = await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"}, credentials={"access_token": "page-token"})
    return client, app, ws, page


def test_cleaning_picks_known_fields_and_normalises_them():
    data = LeadData(
        external_id="L1",
        fields={
            "E-mail": "  Ada@Example.COM ",
            "Full Name": "Ada  King Lovelace",
            "Phone Number": "0044 20 7946-0958",
            "budget": " 10k ",
            "email_address": "second@x.io",
        },
    )
    cleaned = clean_lead(data)
    assert cleaned["email"] == "ada@example.com"
    assert cleaned["phone"] == "+442079460958"
    assert (cleaned["first_name"], cleaned["last_name"], cleaned["full_name"]) == ("Ada", "King Lovelace", "Ada King Lovelace")
    assert cleaned["fields"] == {"budget": "10k", "email_address": "second@x.io"}
    assert normalize_email("not-an-email") is None and normalize_phone("12") is None and normalize_phone("+1 (415) 555-0100") == "+14155550100"


async def test_leadgen_event_fetches_cleans_stores_and_forwards_the_lead(leads_env, graph, receivers, helpers):
    client, app, ws, page = leads_env
    graph.add_lead("lead-1", email="Ada@Example.com", name="Ada Lovelace", extra={"company_name": "Analytical"})
    receiver = await receivers()
    await client.post("/connect/v1/webhooks/facebook/subscribe", json={"url": receiver.url, "events": ["leadgen"]}, headers=ws["headers"])
    event_id = await send(client, leadgen_payload("page-A", "lead-1"))
    (event,) = await settled(helpers, app)
    assert event.status == "PROCESSED" and event.lead_id
    assert ("GET", "/lead-1", "Bearer page-token") in [(m, p, a) for m, p, _, a in graph.requests]
    lead = await (await client.get(f"/leads/{event.lead_id}", headers=ws["headers"])).json()
    assert lead["email"] == "ada@example.com" and lead["firstName"] == "Ada" and lead["lastName"] == "Lovelace"
    assert lead["phone"] == "+442079460958" and lead["customFields"] == {"company_name": "Analytical"}
    assert lead["externalId"] == "lead-1" and lead["eventId"] == event_id and lead["crmSyncStatus"] == "none"
    await receiver.wait_for(1)
    forwarded = json.loads(receiver.requests[0]["body"])
    assert forwarded["event"] == "leadgen" and forwarded["data"]["leadgen_id"] == "lead-1"
    assert forwarded["data"]["lead"]["email"] == "ada@example.com"
    listed = await (await client.get("/leads", params={"accountId": ws["workspace_id"]}, headers=ws["headers"])).json()
    assert listed["total"] == 1 and listed["page"] == 1 and listed["limit"] == 20


async def test_a_repeated_event_goes_nowhere_and_new_events_about_a_known_person_update_their_lead(leads_env, graph, receivers, helpers):
    client, app, ws, _ = leads_env
    receiver = await receivers()
    await client.post("/connect/v1/webhooks/facebook/subscribe", json={"url": receiver.url, "events": ["leadgen"]}, headers=ws["headers"])
    triggered = []

    async def flow_trigger(session, event):
        triggered.append(event.id)

    app[SERVICES].webhook_listeners.add(flow_trigger)
    graph.add_lead("lead-1", email="ada@example.com", phone="+1 415 555 0100", name="Ada Lovelace")
    graph.add_lead("lead-2", email="ADA@example.com ", phone="+1 415 555 0199", name="Ada King", extra={"budget": "10k"})  # same email
    graph.add_lead("lead-3", email="other@example.com", phone="+1 (415) 555-0199")  # the phone lead-2 gave
    first = await send(client, leadgen_payload("page-A", "lead-1"))
    await settled(helpers, app, 1)
    again = leadgen_payload("page-A", "lead-1")
    again["entry"][0]["time"] = 1_700_000_999  # Meta redelivers the same event (new body, same leadgen id)
    repeat = await send(client, again)
    await settled(helpers, app, 2)
    second = await send(client, leadgen_payload("page-A", "lead-2"))
    await settled(helpers, app, 3)
    third = await send(client, leadgen_payload("page-A", "lead-3"))
    rows = {r.id: r for r in await settled(helpers, app, 4)}
    assert [rows[i].status for i in (first, repeat, second, third)] == ["PROCESSED", "DUPLICATE", "PROCESSED", "PROCESSED"]
    assert "received before as event " + first in rows[repeat].reason
    assert rows[repeat].lead_id is None and rows[first].lead_id == rows[second].lead_id == rows[third].lead_id
    async with app[SERVICES].db.session() as session:
        (lead,) = (await session.scalars(select(Lead))).all()
    assert (lead.external_id, lead.event_id, lead.email) == ("lead-1", first, "other@example.com")  # the newest lead's values win
    assert (lead.full_name, lead.phone, lead.fields["budget"]) == ("Ada Lovelace", "+14155550199", "10k")
    assert [p for _, p, _, _ in graph.requests].count("/lead-1") == 1  # the repeated event is not fetched again
    assert sorted(triggered) == sorted([first, second, third])
    await receiver.wait_for(3)
    await helpers.wait_until(lambda: _deliveries_settled(app))
    forwarded = [json.loads(r["body"]) for r in receiver.requests]
    assert sorted(f["id"] for f in forwarded) == sorted([first, second, third])
    assert {f["data"]["lead"]["id"] for f in forwarded} == {lead.id}


async def _deliveries_settled(app) -> bool:
    async with app[SERVICES].db.session() as session:
        return not await session.scalar(select(func.count()).select_from(WebhookDelivery).where(WebhookDelivery.status.notin_(("succeeded", "failed", "gone"))))


async def test_failed_extraction_marks_the_event_failed_but_still_forwards_it(leads_env, graph, receivers, helpers):
    client, app, ws, _ = leads_env
    graph.fail_next = [500]
    receiver = await receivers()
    await client.post("/connect/v1/webhooks/facebook/subscribe", json={"url": receiver.url}, headers=ws["headers"])
    await send(client, leadgen_payload("page-A", "lead-9"))
    (event,) = await settled(helpers, app)
    assert event.status == "FAILED" and "lead extraction failed" in event.reason and event.workspace_id == ws["workspace_id"]
    await receiver.wait_for(1)
    assert json.loads(receiver.requests[0]["body"])["data"]["leadgen_id"] == "lead-9"


async def test_lead_is_pushed_to_the_crm_and_failed_syncs_are_retried_by_cron(leads_env, graph, crm, helpers):
    client, app, ws, _ = leads_env
    await add_connection(app, ws["workspace_id"], "hubspot", credentials={"access_token": "hs-token"})
    crm.fail_next = [503]
    graph.add_lead("lead-1", email="ada@example.com", name="Ada Lovelace")
    await send(client, leadgen_payload("page-A", "lead-1"))
    (event,) = await settled(helpers, app)

    async def lead_status(expected):
        lead = await (await client.get(f"/leads/{event.lead_id}", headers=ws["headers"])).json()
        return lead if lead["crmSyncStatus"] == expected else None

    failed = await helpers.wait_until(lambda: lead_status("failed"))
    assert failed["crmSyncs"][0]["error"] and failed["crmSyncs"][0]["attempts"] == 1
    filtered = await (await client.get("/leads", params={"crmSyncStatus": "failed"}, headers=ws["headers"])).json()
    assert [lead["id"] for lead in filtered["data"]] == [event.lead_id]
    assert (await retry_failed_syncs(app[SERVICES])) == {"queued": 1}
    synced = await helpers.wait_until(lambda: lead_status("synced"))
    assert synced["crmSyncs"][0]["externalId"] == "1000"
    posted = [r for r in crm.requests if r["method"] == "POST"]
    assert posted[-1]["json"] == {"properties": {"email": "ada@example.com", "firstname": "Ada", "lastname": "Lovelace", "phone": "+442079460958"}}
    assert posted[-1]["authorization"] == "Bearer hs-token"
    # a lead already synced is not pushed again
    again = await client.post(f"/crm/push/{event.lead_id}", headers=ws["headers"])
    assert again.status == 201 and (await again.json())["queued"] == 0  # already synced
    test = await (await client.post(f"/crm/{ws['workspace_id']}/test", headers=ws["headers"])).json()
    assert test["ok"] is True and test["destinations"][0]["provider"] == "hubspot"


async def test_push_batch_and_retry_sync_and_tenant_isolation(leads_env, graph, crm, helpers):
    client, app, ws, _ = leads_env
    other = await create_workspace_with_key(app, name="Other")
    graph.add_lead("lead-1", email="a@example.com")
    await send(client, leadgen_payload("page-A", "lead-1"))
    (event,) = await settled(helpers, app)
    assert (await client.post(f"/crm/push/{event.lead_id}", headers=ws["headers"])).status == 400  # no destination yet
    await add_connection(app, ws["workspace_id"], "hubspot", credentials={"access_token": "hs-token"})
    batch = await client.post(f"/crm/push-batch/{ws['workspace_id']}", headers=ws["headers"])
    assert batch.status == 201 and (await batch.json()) == {"accountId": ws["workspace_id"], "leads": 1, "queued": 1}

    async def synced():
        lead = await (await client.get(f"/leads/{event.lead_id}", headers=ws["headers"])).json()
        return lead["crmSyncStatus"] == "synced"

    await helpers.wait_until(synced)
    retried = await client.post(f"/leads/{event.lead_id}/retry-sync", headers=ws["headers"])
    assert (await retried.json())["crmSyncStatus"] == "synced"
    # another workspace sees none of it
    assert (await client.get(f"/leads/{event.lead_id}", headers=other["headers"])).status == 404
    assert (await client.get("/leads", params={"accountId": ws["workspace_id"]}, headers=other["headers"])).status == 404
    assert (await (await client.get("/leads", headers=other["headers"])).json())["total"] == 0
    assert (await client.post(f"/crm/push-batch/{ws['workspace_id']}", headers=other["headers"])).status == 404
    assert (await client.post(f"/leads/{event.lead_id}/retry-sync", headers=other["headers"])).status == 404


async def test_import_runs_page_by_page_and_resumes_after_a_failure(wh_app, aiohttp_client, graph):
    client = await aiohttp_client(wh_app(background=False))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    connection_id = await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    graph.forms["page-A"] = ["form-1", "form-2"]
    for n in range(3):
        graph.add_lead(f"a{n}", email=f"a{n}@example.com", form_id="form-1", phone=f"+1415555010{n}")
    for n in range(2):
        graph.add_lead(f"b{n}", email=f"b{n}@example.com", form_id="form-2", phone=f"+1415555020{n}")
    graph.add_lead("dup", email="a0@example.com", form_id="form-2", phone="+14155550300")
    started = await client.post(f"/leads/import/{ws['workspace_id']}", headers=ws["headers"])
    assert started.status == 201
    (imported,) = (await started.json())["imports"]
    assert imported["status"] == "queued" and imported["connectionId"] == connection_id

    def context(attempt=1):
        return JobContext(app[SERVICES], "job", "leads.import", {"import_id": imported["id"]}, attempt, 5, ws["workspace_id"])

    await import_job(context())  # page 1 of form-1
    graph.fail_next = [500]
    with pytest.raises(RuntimeError):
        await import_job(context())  # page 2 fails: the job queue would retry it
    async with app[SERVICES].db.session() as session:
        row = await session.get(LeadImport, imported["id"])
    assert (row.pages, row.imported, row.status) == (1, 2, "running")
    for _ in range(5):
        await import_job(context(2))
    status = await (await client.get(f"/leads/import/{ws['workspace_id']}/status", headers=ws["headers"])).json()
    assert status["status"] == "completed"
    assert (status["imported"], status["duplicates"]) == (5, 1)
    lead_pages = [q.get("after") for m, p, q, _ in graph.requests if p == "/form-1/leads"]
    assert lead_pages.count(None) == 1  # the first page was not fetched again after the failure
    listed = await (await client.get("/leads", params={"limit": 100}, headers=ws["headers"])).json()
    assert listed["total"] == 5 and {lead["source"] for lead in listed["data"]} == {"import"}


async def test_import_needs_a_lead_connection_of_the_account(wh_app, aiohttp_client):
    client = await aiohttp_client(wh_app(background=False))
    ws = await create_workspace_with_key(client.server.app)
    other = await create_workspace_with_key(client.server.app, name="Other")
    assert (await client.post(f"/leads/import/{ws['workspace_id']}", headers=ws["headers"])).status == 400
    assert (await client.post(f"/leads/import/{ws['workspace_id']}", headers=other["headers"])).status == 404
    status = await (await client.get(f"/leads/import/{ws['workspace_id']}/status", headers=ws["headers"])).json()
    assert status["status"] == "none" and status["imports"] == []


async def test_event_rows_never_leak_between_tenants_on_postgres_and_sqlite(database_url, wh_app, aiohttp_client, graph, receivers, helpers):
    client = await aiohttp_client(wh_app(database_url=database_url))
    app = client.server.app
    first = await create_workspace_with_key(app, name="First")
    second = await create_workspace_with_key(app, name="Second")
    await add_connection(app, first["workspace_id"], "facebook", meta={"page_id": "page-A"})
    await add_connection(app, second["workspace_id"], "facebook", meta={"page_id": "page-B"})
    r1, r2 = await receivers(), await receivers()
    await client.post("/connect/v1/webhooks/facebook/subscribe", json={"url": r1.url}, headers=first["headers"])
    await client.post("/connect/v1/webhooks/facebook/subscribe", json={"url": r2.url}, headers=second["headers"])
    graph.add_lead("lead-A", email="a@example.com")
    graph.add_lead("lead-B", email="a@example.com")  # the same person in both workspaces: not a duplicate
    await send(client, leadgen_payload("page-A", "lead-A"))
    await send(client, leadgen_payload("page-B", "lead-B"))
    rows = await settled(helpers, app, 2)
    assert {r.status for r in rows} == {"PROCESSED"}
    await r1.wait_for(1)
    await r2.wait_for(1)
    assert json.loads(r1.requests[0]["body"])["workspaceId"] == first["workspace_id"]
    assert json.loads(r2.requests[0]["body"])["workspaceId"] == second["workspace_id"]
    for ws in (first, second):
        assert (await (await client.get("/leads", headers=ws["headers"])).json())["total"] == 1
    async with app[SERVICES].db.session() as session:
        assert await session.scalar(select(func.count()).select_from(WebhookEvent)) == 2


async def test_concurrent_events_about_one_person_create_one_lead(database_url, wh_app, aiohttp_client, graph, helpers):
    client = await aiohttp_client(wh_app(background=False, database_url=database_url))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    graph.add_lead("lead-1", email="same@example.com", phone="+14155550100")
    graph.add_lead("lead-2", email="SAME@example.com", phone="+14155550199")
    ids = []
    for n, lead_id in enumerate(["lead-1", "lead-1", "lead-2", "lead-1", "lead-2"]):
        payload = leadgen_payload("page-A", lead_id)
        payload["entry"][0]["time"] = n  # distinct deliveries
        ids.append(await send(client, payload))
    from patchbay.core.webhooks.processing import process_job

    await process_job(JobContext(app[SERVICES], "job", "webhooks.process", {"event_ids": ids}, 1, 10, None))
    rows = await helpers.event_rows(app)
    assert sorted(r.status for r in rows) == ["DUPLICATE"] * 3 + ["PROCESSED"] * 2  # one of each event; lead-2 updates the lead
    async with app[SERVICES].db.session() as session:
        assert await session.scalar(select(func.count()).select_from(Lead)) == 1
