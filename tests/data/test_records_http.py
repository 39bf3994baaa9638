"""Records: CSV import (idempotent), list, search, summary, get, delete, tenant isolation, the
data-sync job through a provider record source against a local fake API (cursor stored per
connection and resource type), and replay reaching a published flow."""

import pytest
from aiohttp import web
from sqlalchemy import select

from patchbay import Provider, RecordSource, Trigger, hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.testing import drain
from patchbay.core.records.models import RecordSyncCursor
from patchbay.core.testing import create_workspace_with_key
from patchbay.testing import LocalServer, add_connection


class FakeCrm(LocalServer):
    """``GET /contacts?after=N`` pages through ``self.contacts`` two at a time (an incremental API)."""

    def __init__(self):
        self.contacts = [{"id": f"c{i}", "email": f"person{i}@example.com", "name": f"Person {i}"} for i in range(5)]
        self.calls = []
        app = web.Application()
        app.router.add_get("/contacts", self._contacts)
        super().__init__(app)

    async def _contacts(self, request):
        after = int(request.query.get("after", "0"))
        self.calls.append((after, request.headers.get("Authorization")))
        page = self.contacts[after : after + 2]
        return web.json_response({"results": page, "next": after + len(page)})


class TestCrmPack:
    """A provider pack as a third party would write it: a provider, a record source, a trigger."""

    @hookimpl
    def register_providers(self):
        return [
            Provider(
                name="testcrm",
                display_name="Test CRM",
                category="crm",
                auth_mode="api_key",
                api_base_url="https://crm.invalid",
                credential_headers={"authorization": "Bearer {api_key}"},
            )
        ]

    @hookimpl
    def register_record_sources(self, register):
        async def fetch(client, cursor):
            response = await client.request("GET", "/contacts", params={"after": cursor or 0})
            body = response.json()
            return body["results"], body["next"]

        register("testcrm", RecordSource(resource_type="contacts", fetch=fetch))

    @hookimpl
    def register_triggers(self, register):
        register("testcrm", Trigger(name="contact_created", display_name="Contact created", kind="webhook", event_types=("contacts",)))


@pytest.fixture
async def fake():
    server = await FakeCrm().start()
    yield server
    await server.close()


@pytest.fixture
async def api(aiohttp_client, make_app, database_url, fake):
    app = make_app(database_url=database_url, plugins=[TestCrmPack()], providers={"testcrm": {"api_base_url": fake.url}})
    client = await aiohttp_client(app)
    client.ws = await create_workspace_with_key(app, plan="enterprise")
    return client


async def import_csv(api, text, headers=None, **query):
    response = await api.post(
        "/connect/v1/records/import", params=query, data=text.encode(), headers={**(headers or api.ws["headers"]), "Content-Type": "text/csv"}
    )
    return response.status, await response.json()


CSV = 'external_id,email,note\nx1,ann@example.com,"likes tea, not coffee"\nx2,bob@example.com,\n,nobody@example.com,no id\n'


@pytest.mark.both_databases
async def test_import_is_idempotent_by_external_id(api):
    status, report = await import_csv(api, CSV, providerType="testcrm", resourceType="contacts")
    assert status == 201 and (report["created"], report["updated"], report["rejected"]) == (3, 0, 0)
    changed = CSV.replace("likes tea", "likes cocoa").replace(",nobody@example.com,no id\n", "")
    status, report = await import_csv(api, changed, providerType="testcrm", resourceType="contacts")
    assert (report["created"], report["updated"]) == (0, 2)
    body = await (await api.get("/connect/v1/records", params={"resourceType": "contacts"}, headers=api.ws["headers"])).json()
    assert body["total"] == 3
    by_id = {r["externalId"]: r for r in body["data"]}
    assert by_id["x1"]["data"] == {"external_id": "x1", "email": "ann@example.com", "note": "likes cocoa, not coffee"}
    assert by_id["x1"]["providerType"] == "testcrm" and by_id["x1"]["resourceType"] == "contacts"
    # the JSON form takes providerType and resourceType in the body; an id column works like external_id
    response = await api.post(
        "/connect/v1/records/import",
        json={"csv": "id,name\n7,Seven\n7,Seven again\n", "providerType": "testcrm", "resourceType": "deals"},
        headers=api.ws["headers"],
    )
    report = await response.json()
    assert response.status == 201 and report["created"] == 1
    status, report = await import_csv(api, "id,name\n7,Seven\n", providerType="testcrm", resourceType="deals")
    assert (report["created"], report["updated"]) == (0, 1)
    status, body = await import_csv(api, CSV, providerType="testcrm")
    assert status == 400 and "resourceType" in body["message"]


async def test_list_search_summary_get_delete(api):
    await import_csv(api, CSV, providerType="testcrm", resourceType="contacts")
    await import_csv(api, "id,title\nd1,Big deal\n", providerType="othercrm", resourceType="deals")
    headers = api.ws["headers"]
    found = await (await api.get("/connect/v1/records", params={"search": "tea coff"}, headers=headers)).json()
    assert [r["externalId"] for r in found["data"]] == ["x1"] and found["total"] == 1
    found = await (await api.get("/connect/v1/records", params={"search": "bob@example.com"}, headers=headers)).json()
    assert [r["externalId"] for r in found["data"]] == ["x2"]
    only = await (await api.get("/connect/v1/records", params={"providerType": "othercrm"}, headers=headers)).json()
    assert [r["externalId"] for r in only["data"]] == ["d1"]
    summary = await (await api.get("/connect/v1/records/summary", headers=headers)).json()
    assert summary["total"] == 4 and summary["byResourceType"] == {"contacts": 3, "deals": 1} and summary["byProvider"] == {"testcrm": 3, "othercrm": 1}
    assert {"resourceType": "contacts", "providerType": "testcrm", "count": 3} in summary["groups"]
    record = only["data"][0]
    assert (await (await api.get(f"/connect/v1/records/{record['id']}", headers=headers)).json())["data"] == {"id": "d1", "title": "Big deal"}
    assert (await api.delete(f"/connect/v1/records/{record['id']}", headers=headers)).status == 200
    assert (await api.get(f"/connect/v1/records/{record['id']}", headers=headers)).status == 404
    assert (await (await api.get("/connect/v1/records", params={"search": "big"}, headers=headers)).json())["total"] == 0


@pytest.mark.both_databases
async def test_records_are_tenant_isolated(api):
    await import_csv(api, CSV, providerType="testcrm", resourceType="contacts")
    mine = await (await api.get("/connect/v1/records", headers=api.ws["headers"])).json()
    other = await create_workspace_with_key(api.server.app, name="Other")
    headers = other["headers"]
    assert (await (await api.get("/connect/v1/records", headers=headers)).json())["total"] == 0
    assert (await (await api.get("/connect/v1/records", params={"search": "ann"}, headers=headers)).json())["total"] == 0
    assert (await (await api.get("/connect/v1/records/summary", headers=headers)).json())["total"] == 0
    record_id = mine["data"][0]["id"]
    for method in ("get", "delete"):
        assert (await getattr(api, method)(f"/connect/v1/records/{record_id}", headers=headers)).status == 404
    assert (await api.post(f"/connect/v1/records/{record_id}/replay", headers=headers)).status == 404
    # the same external ids imported by another workspace are its own records
    status, report = await import_csv(api, CSV, headers=headers, providerType="testcrm", resourceType="contacts")
    assert report["created"] == 3
    assert (await (await api.get("/connect/v1/records", headers=api.ws["headers"])).json())["total"] == 3


async def test_data_sync_ingests_incrementally_with_a_stored_cursor(api, fake):
    app = api.server.app
    connection_id = await add_connection(app, api.ws["workspace_id"], "testcrm", credentials={"api_key": "k-123"})
    summary = await app[SERVICES].cron.jobs["data-sync"].run(app[SERVICES])
    assert summary["connections"] == 1
    await drain(app[SERVICES], kinds=("records.sync",))
    body = await (await api.get("/connect/v1/records", params={"providerType": "testcrm", "limit": "100"}, headers=api.ws["headers"])).json()
    assert sorted(r["externalId"] for r in body["data"]) == ["c0", "c1", "c2", "c3", "c4"]
    assert {r["connectionId"] for r in body["data"]} == {connection_id} and {r["source"] for r in body["data"]} == {"sync"}
    assert fake.calls[0] == (0, "Bearer k-123")  # the credential was injected by the connection client
    async with app[SERVICES].db.session() as session:
        cursor = await session.scalar(select(RecordSyncCursor).where(RecordSyncCursor.connection_id == connection_id))
    assert (cursor.resource_type, cursor.cursor, cursor.records_synced) == ("contacts", "5", 5)
    # the next run resumes from the cursor: only the new contact is fetched, the edited one updates
    fake.calls.clear()
    fake.contacts.append({"id": "c5", "email": "new@example.com", "name": "Newcomer"})
    fake.contacts[5]["name"] = "Newcomer Renamed"
    from patchbay.core.records.sync import sync_connection

    await sync_connection(app[SERVICES], workspace_id=api.ws["workspace_id"], connection_id=connection_id)
    assert fake.calls[0][0] == 5
    body = await (await api.get("/connect/v1/records", params={"search": "renamed"}, headers=api.ws["headers"])).json()
    assert [r["externalId"] for r in body["data"]] == ["c5"]
    assert (await (await api.get("/connect/v1/records/summary", headers=api.ws["headers"])).json())["total"] == 6


async def test_replay_starts_the_matching_published_flow(api):
    headers = api.ws["headers"]
    await api.post("/connect/v1/tables", json={"name": "Seen", "slug": "seen", "columns": [{"name": "email", "type": "text"}]}, headers=headers)
    steps = [{"id": "save", "type": "table.upsert", "table": "seen", "externalKey": "{{ trigger.externalId }}", "data": {"email": "{{ trigger.data.email }}"}}]
    flow = await (await api.post("/connect/v1/flows", json={"name": "On contact", "steps": steps}, headers=headers)).json()
    assert (await api.post(f"/connect/v1/flows/{flow['id']}/publish", headers=headers)).status in (200, 201)
    response = await api.post(f"/connect/v1/flows/{flow['id']}/triggers", json={"providerType": "testcrm", "triggerName": "contact_created"}, headers=headers)
    assert response.status == 201, await response.text()
    await import_csv(api, CSV, providerType="testcrm", resourceType="contacts")
    await import_csv(api, "id,x\n1,2\n", providerType="testcrm", resourceType="invoices")
    records = {r["externalId"]: r for r in (await (await api.get("/connect/v1/records", headers=headers)).json())["data"]}
    response = await api.post(f"/connect/v1/records/{records['x1']['id']}/replay", headers=headers)
    assert response.status == 201 and (await response.json())["fired"] == 1
    unmatched = await (await api.post(f"/connect/v1/records/{records['1']['id']}/replay", headers=headers)).json()
    assert unmatched["fired"] == 0  # no subscription listens to invoices
    await drain(api.server.app[SERVICES])
    row = await (await api.get("/connect/v1/tables/seen/rows/lookup", params={"column": "external_key", "value": "x1"}, headers=headers)).json()
    assert row is not None and row["data"] == {"email": "ann@example.com"}
