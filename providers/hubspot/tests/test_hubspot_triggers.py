"""HubSpot's poll trigger, built on the shared high-water-mark helper: the first poll only sets the
cursor, later polls search after it and move it to the newest createdate, never back
(``patchbay.testing.FakeClient`` stands in for the connection client)."""

from __future__ import annotations

from patchbay.providers import hubspot
from patchbay.testing import FakeClient, registered


def _poll():
    return registered(hubspot, "triggers", "hubspot", "new_contact").poll


async def test_hubspot_new_contacts_search_after_the_cursor():
    found = {
        "results": [
            {"id": "101", "properties": {"email": "a@example.com", "createdate": "2026-11-01T10:00:00.000Z"}},
            {"id": "102", "properties": {"email": "b@example.com", "createdate": "1793527260000"}},
            {"id": "103", "properties": {"email": "c@example.com"}},
        ]
    }
    client = FakeClient(respond=lambda call: found)
    items, cursor = await _poll()(client, {}, None)
    assert items == [] and cursor.isdigit() and len(cursor) == 13 and client.calls == []
    items, next_cursor = await _poll()(client, {}, "1793527100000")
    call = client.calls[0]
    assert (call.method, call.path) == ("POST", "/crm/v3/objects/contacts/search")
    assert call.json["filterGroups"][0]["filters"][0] == {"propertyName": "createdate", "operator": "GT", "value": "1793527100000"}
    assert {i["id"] for i in items} == {"101", "102", "103"} and next_cursor == "1793527260000"


async def test_hubspot_cursor_never_moves_back():
    """The shared high-water-mark helper keeps the cursor when HubSpot answers older contacts."""
    client = FakeClient(respond=lambda call: {"results": [{"id": "101", "properties": {"createdate": "2026-11-01T10:00:00.000Z"}}]})
    assert (await _poll()(client, {}, "1893527200000"))[1] == "1893527200000"
