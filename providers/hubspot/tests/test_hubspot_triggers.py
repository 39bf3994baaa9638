"""HubSpot's poll trigger, built on the shared high-water-mark helper: the first poll only sets the
cursor, later polls search after it and move it to the newest createdate, never back (a fake client
stands in for the connection client)."""

from __future__ import annotations

import json

from patchbay.providers.hubspot import actions as hubspot


class FakeResponse:
    def __init__(self, body):
        self.status = 200
        self.body = body

    def json(self):
        return self.body

    @property
    def text(self):
        return json.dumps(self.body)


class FakeClient:
    def __init__(self, answer):
        self.answer = answer
        self.calls = []

    async def request(self, method, path, *, params=None, json=None, data=None, headers=None):
        self.calls.append((method, path, params, json))
        return FakeResponse(self.answer(method, path, params, json))


def _trigger(module, name):
    return next(t for t in module.triggers() if t.name == name)


async def test_hubspot_new_contacts_search_after_the_cursor():
    found = {"results": [{"id": "101", "properties": {"email": "a@example.com", "createdate": "2026-11-01T10:00:00.000Z"}},
                         {"id": "102", "properties": {"email": "b@example.com", "createdate": "1793527260000"}},
                         {"id": "103", "properties": {"email": "c@example.com"}}]}  # fmt: skip
    client = FakeClient(lambda m, p, params, j: found)
    poll = _trigger(hubspot, "new_contact").poll
    items, cursor = await poll(client, {}, None)
    assert items == [] and cursor.isdigit() and len(cursor) == 13 and client.calls == []
    items, next_cursor = await poll(client, {}, "1793527100000")
    method, path, _, body = client.calls[0]
    assert (method, path) == ("POST", "/crm/v3/objects/contacts/search")
    assert body["filterGroups"][0]["filters"][0] == {"propertyName": "createdate", "operator": "GT", "value": "1793527100000"}
    assert {i["id"] for i in items} == {"101", "102", "103"} and next_cursor == "1793527260000"


async def test_hubspot_cursor_never_moves_back():
    """The shared high-water-mark helper keeps the cursor when HubSpot answers older contacts."""
    client = FakeClient(lambda m, p, params, j: {"results": [{"id": "101", "properties": {"createdate": "2026-11-01T10:00:00.000Z"}}]})
    poll = _trigger(hubspot, "new_contact").poll
    assert (await poll(client, {}, "1893527200000"))[1] == "1893527200000"
