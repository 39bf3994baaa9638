"""HubSpot's poll trigger: the first poll only sets the cursor, later polls search after it (a fake
client stands in for the connection client)."""

from __future__ import annotations

import json

import pytest

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


@pytest.mark.parametrize("created", ["2026-11-01T10:00:00.000Z"])
async def test_hubspot_new_contacts_search_after_the_cursor(created):
    found = {"results": [{"id": "101", "properties": {"email": "a@example.com", "createdate": created}}]}
    client = FakeClient(lambda m, p, params, j: found)
    poll = _trigger(hubspot, "new_contact").poll
    items, cursor = await poll(client, {}, None)
    assert items == [] and cursor.isdigit()
    items, next_cursor = await poll(client, {}, "1000")
    method, path, _, body = client.calls[0]
    assert (method, path) == ("POST", "/crm/v3/objects/contacts/search")
    assert body["filterGroups"][0]["filters"][0] == {"propertyName": "createdate", "operator": "GT", "value": "1000"}
    assert [i["id"] for i in items] == ["101"] and next_cursor == "1793527200000"

