"""HubSpot's pack on its own (``pytest providers/hubspot``): the acceptance suite, its actions
through the API, and its CRM mapping paging to the end against a fake of HubSpot's API."""

import base64
import hashlib
import hmac
import json

import pytest

from patchbay.testing import pack_acceptance


def sign_v3(body: bytes, secret: str, timestamp: int) -> dict[str, str]:
    millis = str(timestamp * 1000)
    message = b"POST" + b"https://patchbay.test/webhook/hubspot" + body + millis.encode()
    signature = base64.b64encode(hmac.new(secret.encode(), message, hashlib.sha256).digest()).decode()
    return {"X-HubSpot-Signature-v3": signature, "X-HubSpot-Request-Timestamp": millis}


# the definition comes from the catalog pack (see providers/hubspot/__init__.py)
TestAcceptance = pack_acceptance("hubspot", webhook_signer=sign_v3)


def test_behaviour_is_registered_by_the_hubspot_pack():
    from patchbay.core.plugins.manager import create_plugin_manager
    from patchbay.core.plugins.registry import load_registry

    registry = load_registry(create_plugin_manager())
    owners: dict[str, set[str]] = {}
    for (kind, key), owner in registry._owners.items():
        if key.split("/")[0] == "hubspot":
            owners.setdefault(kind, set()).add(owner)
    assert owners == {
        "actions": {"hubspot", "declared"},  # update_contact is declared in providers/hubspot/actions.toml
        "triggers": {"hubspot"},
        "crm_mappers": {"hubspot"},
        "record_sources": {"hubspot"},
        "webhooks": {"hubspot"},
        "crm_destinations": {"hubspot"},
    }
    assert registry._owners[("actions", "hubspot/update_contact")] == "declared"


@pytest.mark.asyncio
async def test_create_contact_through_the_api(pack_harness):
    harness = await pack_harness("hubspot")
    harness.fake.routes[("POST", "/crm/v3/objects/contacts")] = (201, {"id": "501"})
    body = {"email": "ada@example.com", "firstname": "Ada"}
    response = await harness.http.post("/connect/v1/providers/hubspot/actions/create_contact", json=body, headers=harness.workspace["headers"])
    assert response.status == 201, await response.text()
    assert (await response.json())["data"] == {"id": "501"}
    sent = harness.fake.requests[-1]
    assert json.loads(sent.body) == {"properties": {"email": "ada@example.com", "firstname": "Ada"}}
    assert sent.headers["Authorization"] == "Bearer acceptance-token"


@pytest.mark.asyncio
async def test_crm_contacts_page_to_the_end(pack_harness):
    harness = await pack_harness("hubspot")
    pages = {None: ([{"id": "1", "properties": {"email": "a@x.test"}}], "2"), "2": ([{"id": "2", "properties": {"email": "b@x.test"}}], None)}

    def contacts(request):
        results, after = pages[request.query.get("after")]
        return 200, {"results": results, **({"paging": {"next": {"after": after}}} if after else {})}

    harness.fake.routes[("GET", "/crm/v3/objects/contacts")] = contacts
    mapper = harness.registry.get("crm_mappers", "hubspot")
    client = await harness.client()
    seen, cursor = [], None
    for _ in range(5):
        records, cursor = await mapper.list(client, "contacts", 1, cursor)
        seen += records
        if cursor is None:
            break
    assert [(r["id"], r["email"]) for r in seen] == [("1", "a@x.test"), ("2", "b@x.test")] and cursor is None
