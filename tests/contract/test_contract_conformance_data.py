"""The data routes (leads, CRM push, records, provider actions, the unified CRM, data deletion)
answer through response models: /openapi.json gives each a success schema, and schemathesis'
positive phases find every answer of theirs matching it (``response_schema_conformance``) and
none a server error, on SQLite and PostgreSQL.

Bounded for CI like ``test_contract_conformance``: a few examples per operation and a budget after
which the run fails instead of hanging. Everything is answered locally: the contract provider is
no CRM, so the unified CRM routes answer their documented 404 (no CRM connection) or 401 (an API
key on a user's route), and with no CRM destination the pushes answer 400; those answers are
checked against ``Error`` the same way. Records, a lead, an action list and a deletion request are
seeded so that the other answers carry data. A table's CSV export is declared as ``text/csv``."""

from __future__ import annotations

import re

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.compliance.models import DeletionRequest
from patchbay.core.leads.models import Lead
from tests.contract.conformance import Operations

BUDGET_SECONDS = 150
MAX_EXAMPLES = 4
PATHS = (
    r"^/(leads|crm|connect/v1/records|connect/v1/providers/(actions/catalog|\{providerType\}/actions)|api/(execute|registry|unified)"
    r"|compliance/data-deletion)(/|$)"
)

_UNIFIED = {
    (f"/api/unified{user}/crm/{resource}{item}", "get"): "200"
    for user in ("", "/user")
    for resource in ("contacts", "companies", "deals")
    for item in ("", "/{itemId}")
}
#: every operation of these areas and the status it answers on success
OPERATIONS = {
    ("/leads", "get"): "200",
    ("/leads/import/{accountId}", "post"): "201",
    ("/leads/import/{accountId}/status", "get"): "200",
    ("/leads/{id}", "get"): "200",
    ("/leads/{id}/retry-sync", "post"): "201",
    ("/crm/push/{leadId}", "post"): "201",
    ("/crm/push-batch/{accountId}", "post"): "201",
    ("/crm/{accountId}/test", "post"): "201",
    ("/connect/v1/records", "get"): "200",
    ("/connect/v1/records/summary", "get"): "200",
    ("/connect/v1/records/import", "post"): "201",
    ("/connect/v1/records/{id}", "get"): "200",
    ("/connect/v1/records/{id}", "delete"): "200",
    ("/connect/v1/records/{id}/replay", "post"): "201",
    ("/connect/v1/providers/actions/catalog", "get"): "200",
    ("/connect/v1/providers/{providerType}/actions", "get"): "200",
    ("/connect/v1/providers/{providerType}/actions/{actionName}", "post"): "201",
    ("/api/execute", "post"): "201",
    ("/api/registry/actions", "get"): "200",
    ("/api/registry/actions/{actionId}/options/{fieldKey}", "get"): "200",
    ("/api/unified/crm/providers", "get"): "200",
    **_UNIFIED,
    ("/compliance/data-deletion", "get"): "200",
    ("/compliance/data-deletion", "post"): "201",
    ("/compliance/data-deletion/status", "get"): "200",
}


async def test_every_data_operation_publishes_a_success_schema(aiohttp_client, make_app):
    client = await aiohttp_client(make_app())
    document = await (await client.get("/openapi.json")).json()
    found = {(path, method) for path, item in document["paths"].items() for method in item if re.match(PATHS, path)}
    assert found == set(OPERATIONS)
    for (path, method), status in OPERATIONS.items():
        responses = document["paths"][path][method]["responses"]
        assert "default" not in responses and [code for code in responses if code[0] == "2"] == [status], (method, path, responses)
        assert responses[status]["content"]["application/json"]["schema"], (method, path)


async def test_the_table_export_declares_csv(aiohttp_client, make_app):
    client = await aiohttp_client(make_app())
    document = await (await client.get("/openapi.json")).json()
    responses = document["paths"]["/connect/v1/tables/{slug}/export"]["get"]["responses"]
    assert "default" not in responses and responses["200"]["content"] == {"text/csv": {"schema": {"type": "string"}}}


async def _seed(api) -> dict[str, str]:
    """A connection, imported records (a spare for the delete, which would otherwise take away
    what the others read), a lead and a deletion request."""
    connected = await api.call("POST", f"/connect/v1/providers/{api.provider}/connect", expect=201, json={"credentials": {"apiKey": "k-1"}})
    csv = "external_id,email,name\nc-1,a@example.com,Ann\nc-2,b@example.com,Bob\n"
    report = await api.call("POST", "/connect/v1/records/import", expect=201, json={"csv": csv, "providerType": api.provider, "resourceType": "contacts"})
    assert report["created"] == 2
    records = (await api.call("GET", "/connect/v1/records", expect=200))["data"]
    workspace_id = api.workspace["workspace_id"]
    async with api.server.app[SERVICES].db.transaction(tenant=workspace_id) as session:
        lead = Lead(workspace_id=workspace_id, provider=api.provider, source="import", email="lead@example.com", full_name="Lee Ad", fields={"budget": 5})
        deletion = DeletionRequest(confirmation_code="code-1", source="user", subject="someone")
        session.add_all([lead, deletion])
        await session.flush()
        lead_id = lead.id
    return {"workspace": workspace_id, "connection": connected["connectionId"], "record": records[0]["id"], "spare_record": records[1]["id"], "lead": lead_id}


def _parameters(seeded: dict[str, str]) -> tuple[dict[str, str], list[Operations]]:
    """The path and query parameters that name seeded things (``id`` is a lead or a record by
    route)."""
    values = {
        "path.accountId": seeded["workspace"],
        "path.leadId": seeded["lead"],
        "path.id": seeded["lead"],
        "path.providerType": "hubspot",
        "path.actionName": "create_contact",
        "path.actionId": "hubspot.create_deal",
        "path.fieldKey": "pipeline",
        "query.connectionId": seeded["connection"],
        "query.code": "code-1",
    }
    operations = [
        Operations('include-path-regex = "^/connect/v1/records/"', {"path.id": seeded["record"]}),
        Operations('include-operation-id = "delete_delete_record"', {"path.id": seeded["spare_record"]}),
    ]
    return values, operations


@pytest.mark.timeout(BUDGET_SECONDS + 60)
@pytest.mark.both_databases
async def test_data_answers_match_the_document(live_api, conformance):
    await conformance(PATHS, *_parameters(await _seed(live_api)), budget=BUDGET_SECONDS, max_examples=MAX_EXAMPLES)
