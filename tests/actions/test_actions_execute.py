"""Provider actions (spec 4.7, 4.18): catalog, schemas, execution with stored credentials against
local fakes of the providers' APIs, the monthly cap, the registry and dynamic options, and action
steps in flows."""

from __future__ import annotations

import hashlib
import json

import pytest
from aiohttp import web

from patchbay.core.testing import create_workspace_with_key
from patchbay.testing import LocalServer, add_connection


class FakeApi(LocalServer):
    """Answers every call with ``responses[(method, path)]`` (or a generic object) and records it."""

    def __init__(self):
        self.calls = []
        self.responses = {}
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        super().__init__(app)

    async def _handle(self, request):
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode()
        self.calls.append(
            {
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "body": body,
                "authorization": request.headers.get("Authorization"),
                "headers": dict(request.headers),
            }
        )
        status, answer = self.responses.get((request.method, request.path), (200, {"id": "obj-1", "ok": True}))
        return web.json_response(answer, status=status)


PROVIDERS = ("hubspot", "salesforce", "pipedrive", "slack", "google-sheet", "google-mail", "notion", "airtable", "stripe", "mailchimp")


@pytest.fixture
async def fake():
    server = await FakeApi().start()
    yield server
    await server.close()


@pytest.fixture
async def setup_app(aiohttp_client, make_app, fake):
    overrides = {name: {"api_base_url": fake.url} for name in PROVIDERS}
    client = await aiohttp_client(make_app(providers=overrides, plans={"free": {"action_executions": 3}}))
    ws = await create_workspace_with_key(client.server.app)
    return client, ws


# Each provider's main action: inputs, and what the provider must receive.
CASES = [
    (
        "hubspot",
        "create_contact",
        {"email": "ada@example.com", "firstname": "Ada", "phone": ""},
        "POST",
        "/crm/v3/objects/contacts",
        lambda b: b == {"properties": {"email": "ada@example.com", "firstname": "Ada"}},
    ),
    (
        "salesforce",
        "create_lead",
        {"LastName": "Lovelace", "Company": "Analytical"},
        "POST",
        "/services/data/v59.0/sobjects/Lead",
        lambda b: b == {"LastName": "Lovelace", "Company": "Analytical"},
    ),
    (
        "pipedrive",
        "create_person",
        {"name": "Ada", "email": "ada@example.com"},
        "POST",
        "/v1/persons",
        lambda b: b["name"] == "Ada" and b["email"] == [{"value": "ada@example.com", "primary": True}],
    ),
    ("slack", "send_message", {"channel": "C1", "text": "hi"}, "POST", "/chat.postMessage", lambda b: b == {"channel": "C1", "text": "hi"}),
    (
        "google-sheet",
        "append_row",
        {"spreadsheetId": "s1", "range": "Leads!A:B", "values": ["a", 1]},
        "POST",
        "/v4/spreadsheets/s1/values/Leads!A:B:append",
        lambda b: b == {"values": [["a", 1]]},
    ),
    (
        "google-mail",
        "send_email",
        {"to": "b@example.com", "subject": "Hi", "body": "Hello"},
        "POST",
        "/gmail/v1/users/me/messages/send",
        lambda b: set(b) == {"raw"},
    ),
    (
        "notion",
        "create_page",
        {"databaseId": "db1", "title": "Note"},
        "POST",
        "/v1/pages",
        lambda b: b["parent"] == {"database_id": "db1"} and b["properties"]["Name"]["title"][0]["text"]["content"] == "Note",
    ),
    (
        "airtable",
        "create_record",
        {"baseId": "app1", "table": "Contacts", "fields": {"Email": "a@b.co"}},
        "POST",
        "/v0/app1/Contacts",
        lambda b: b == {"fields": {"Email": "a@b.co"}, "typecast": True},
    ),
    (
        "airtable",
        "update_record",
        {"baseId": "app1", "table": "My Contacts", "recordId": "rec1", "fields": {"Email": "a@b.co"}},
        "PATCH",
        "/v0/app1/My Contacts/rec1",
        lambda b: b == {"fields": {"Email": "a@b.co"}, "typecast": True},
    ),
    (
        "hubspot",
        "update_contact",
        {"contactId": "512", "properties": {"firstname": "Ada"}},
        "PATCH",
        "/crm/v3/objects/contacts/512",
        lambda b: b == {"properties": {"firstname": "Ada"}},
    ),
    (
        "stripe",
        "create_refund",
        {"payment_intent": "pi_1", "amount": 500},
        "POST",
        "/v1/refunds",
        lambda b: b == "payment_intent=pi_1&amount=500",
    ),
    (
        "stripe",
        "create_customer",
        {"email": "ada@example.com", "metadata": {"plan": "pro"}},
        "POST",
        "/v1/customers",
        lambda b: b == "email=ada%40example.com&metadata%5Bplan%5D=pro",
    ),
    (
        "mailchimp",
        "add_member",
        {"listId": "L1", "email": "Ada@Example.com"},
        "PUT",
        "/3.0/lists/L1/members/" + hashlib.md5(b"ada@example.com").hexdigest(),  # noqa: S324
        lambda b: b["email_address"] == "Ada@Example.com" and b["status_if_new"] == "subscribed",
    ),
]


@pytest.mark.parametrize("provider, action, inputs, method, path, check", CASES, ids=[c[0] for c in CASES])
async def test_each_provider_action_calls_its_api_with_the_stored_credential(aiohttp_client, make_app, fake, provider, action, inputs, method, path, check):
    client = await aiohttp_client(make_app(providers={provider: {"api_base_url": fake.url}}))
    ws = await create_workspace_with_key(client.server.app)
    connection_id = await add_connection(client.server.app, ws["workspace_id"], provider, credentials={"access_token": "tok-123"})
    response = await client.post("/api/execute", json={"connectionId": connection_id, "action": action, "inputs": inputs}, headers=ws["headers"])
    assert response.status == 201, await response.text()
    (call,) = fake.calls
    assert (call["method"], call["path"]) == (method, path)
    assert check(call["body"]), call["body"]
    assert "tok-123" in (call["authorization"] or "")


async def test_catalog_and_per_provider_lists(setup_app):
    client, ws = setup_app
    assert (await client.get("/connect/v1/providers/actions/catalog")).status == 401
    catalog = await (await client.get("/connect/v1/providers/actions/catalog", headers=ws["headers"])).json()
    names = {entry["providerType"]: entry for entry in catalog}
    assert set(PROVIDERS) <= set(names) and names["hubspot"]["actionCount"] == 4 and names["hubspot"]["displayName"] == "HubSpot"
    actions = await (await client.get("/connect/v1/providers/hubspot/actions", headers=ws["headers"])).json()
    create = next(a for a in actions if a["name"] == "create_contact")
    assert create["inputs"]["required"] == ["email"] and create["scopes"] == ["crm.objects.contacts.write"]
    assert (await client.get("/connect/v1/providers/nope/actions", headers=ws["headers"])).status == 404
    registry = await (await client.get("/api/registry/actions?appId=slack", headers=ws["headers"])).json()
    assert [a["id"] for a in registry["data"]] == ["slack.send_message"]


async def test_execute_validates_inputs_and_counts_against_the_monthly_cap(setup_app, fake):
    client, ws = setup_app
    h = ws["headers"]
    connection_id = await add_connection(client.server.app, ws["workspace_id"], "hubspot")
    missing = await client.post("/connect/v1/providers/hubspot/actions/create_contact", json={"firstname": "Ada"}, headers=h)
    assert missing.status == 400 and "inputs.email" in (await missing.json())["message"]
    typed = await client.post("/connect/v1/providers/hubspot/actions/create_contact", json={"inputs": {"email": 5}, "connectionId": connection_id}, headers=h)
    assert typed.status == 400 and "inputs.email: 5 is not of type 'string'" in (await typed.json())["message"]
    unknown = await client.post("/connect/v1/providers/hubspot/actions/nope", json={"email": "a@b.co"}, headers=h)
    assert unknown.status == 404
    # the only hubspot connection is used when none is named
    ok = await client.post("/connect/v1/providers/hubspot/actions/create_contact", json={"email": "a@b.co"}, headers=h)
    assert ok.status == 201 and (await ok.json())["data"] == {"id": "obj-1", "ok": True}
    await client.post("/api/execute", json={"connectionId": connection_id, "action": "hubspot.create_contact", "inputs": {"email": "b@b.co"}}, headers=h)
    await client.post("/api/execute", json={"connectionId": connection_id, "action": "create_contact", "inputs": {"email": "c@b.co"}}, headers=h)
    capped = await client.post("/api/execute", json={"connectionId": connection_id, "action": "create_contact", "inputs": {"email": "d@b.co"}}, headers=h)
    assert capped.status == 403 and (await capped.json())["message"].startswith("Plan limit exceeded for action_executions:")
    assert len(fake.calls) == 3
    viewer = await create_workspace_with_key(client.server.app, name="V", permissions=["actions.view"])
    assert (
        await client.post("/api/execute", json={"connectionId": connection_id, "action": "create_contact", "inputs": {}}, headers=viewer["headers"])
    ).status == 403
    other = await create_workspace_with_key(client.server.app, name="O")
    foreign = await client.post(
        "/api/execute", json={"connectionId": connection_id, "action": "create_contact", "inputs": {"email": "x@b.co"}}, headers=other["headers"]
    )
    assert foreign.status == 404


async def test_provider_errors_and_dynamic_options(setup_app, fake):
    client, ws = setup_app
    h = ws["headers"]
    slack = await add_connection(client.server.app, ws["workspace_id"], "slack")
    fake.responses[("POST", "/chat.postMessage")] = (200, {"ok": False, "error": "channel_not_found"})
    refused = await client.post("/api/execute", json={"connectionId": slack, "action": "send_message", "inputs": {"channel": "C9", "text": "x"}}, headers=h)
    assert refused.status == 502 and "channel_not_found" in (await refused.json())["message"]
    fake.responses[("GET", "/conversations.list")] = (200, {"ok": True, "channels": [{"id": "C1", "name": "general"}]})
    options = await client.get(f"/api/registry/actions/slack.send_message/options/channel?connectionId={slack}", headers=h)
    assert options.status == 200 and (await options.json())["data"] == [{"label": "#general", "value": "C1"}]
    assert (await client.get("/api/registry/actions/slack.send_message/options/text?connectionId=" + slack, headers=h)).status == 404
    assert (await client.get("/api/registry/actions/slack.send_message/options/channel", headers=h)).status == 400


async def test_an_action_step_runs_in_a_flow(setup_app, fake):
    client, ws = setup_app
    h = ws["headers"]
    connection_id = await add_connection(client.server.app, ws["workspace_id"], "hubspot")
    steps = [
        {
            "id": "contact",
            "type": "action",
            "provider": "hubspot",
            "action": "create_contact",
            "connectionId": connection_id,
            "inputs": {"email": "{{ trigger.email }}"},
        }
    ]
    flow = await (await client.post("/connect/v1/flows", json={"name": "a", "steps": steps}, headers=h)).json()
    execution = await (await client.post(f"/connect/v1/flows/{flow['id']}/test", json={"email": "ada@example.com"}, headers=h)).json()
    assert execution["status"] == "completed" and execution["steps"][0]["output"] == {"id": "obj-1", "ok": True}
    assert fake.calls[0]["body"] == {"properties": {"email": "ada@example.com"}}
    wrong = [{**steps[0], "provider": "slack"}]
    await client.patch(f"/connect/v1/flows/{flow['id']}", json={"steps": wrong}, headers=h)
    failed = await (await client.post(f"/connect/v1/flows/{flow['id']}/test", json={"email": "x"}, headers=h)).json()
    assert failed["status"] == "failed" and "not slack" in failed["error"]


# Declared actions that read: what the provider must receive in the query string.
QUERY_CASES = [
    (
        "airtable",
        "find_records",
        {"baseId": "app1", "table": "Contacts", "formula": "{Email} = 'a@b.co'"},
        "/v0/app1/Contacts",
        {"filterByFormula": "{Email} = 'a@b.co'", "maxRecords": "10"},
    ),
    (
        "airtable",
        "find_records",
        {"baseId": "app1", "table": "Contacts", "formula": "TRUE()", "maxRecords": 3},
        "/v0/app1/Contacts",
        {"filterByFormula": "TRUE()", "maxRecords": "3"},
    ),
    ("salesforce", "query", {"soql": "SELECT Id FROM Lead"}, "/services/data/v59.0/query", {"q": "SELECT Id FROM Lead"}),
    ("facebook", "get_lead", {"leadId": "444"}, "/v19.0/444", {"fields": "id,created_time,field_data,form_id,ad_id"}),
]


@pytest.mark.parametrize("provider, action, inputs, path, query", QUERY_CASES, ids=[f"{c[0]}.{c[1]}" for c in QUERY_CASES])
async def test_each_declared_read_sends_its_query(aiohttp_client, make_app, fake, provider, action, inputs, path, query):
    client = await aiohttp_client(make_app(providers={provider: {"api_base_url": fake.url}}))
    ws = await create_workspace_with_key(client.server.app)
    connection_id = await add_connection(client.server.app, ws["workspace_id"], provider, credentials={"access_token": "tok-123"})
    response = await client.post("/api/execute", json={"connectionId": connection_id, "action": action, "inputs": inputs}, headers=ws["headers"])
    assert response.status == 201, await response.text()
    (call,) = fake.calls
    assert (call["method"], call["path"]) == ("GET", path)
    assert {key: value for key, value in call["query"].items() if key in query} == query
