"""The built-in poll triggers: the first poll only sets the cursor, later polls answer what is new
and move the cursor on (a fake client stands in for the connection client)."""

from __future__ import annotations

import json

import pytest

from patchbay.providers.actions import google_sheets, hubspot, pipedrive, stripe


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


async def test_stripe_new_charges_use_created_as_cursor():
    charges = [{"id": "ch_2", "created": 200}, {"id": "ch_1", "created": 150}]
    client = FakeClient(lambda m, p, params, j: {"data": [c for c in charges if c["created"] > params["created[gt]"]]})
    poll = _trigger(stripe, "new_charge").poll
    items, cursor = await poll(client, {}, None)
    assert items == [] and isinstance(cursor, int) and client.calls == []
    items, cursor = await poll(client, {}, 100)
    assert [i["id"] for i in items] == ["ch_1", "ch_2"] and cursor == 200
    items, cursor = await poll(client, {}, cursor)
    assert items == [] and cursor == 200


async def test_pipedrive_new_deals_above_the_highest_id_seen():
    deals = [{"id": 3, "title": "c"}, {"id": 2, "title": "b"}, {"id": 1, "title": "a"}]
    client = FakeClient(lambda m, p, params, j: {"data": deals})
    poll = _trigger(pipedrive, "new_deal").poll
    assert await poll(client, {}, None) == ([], 3)
    deals.insert(0, {"id": 4, "title": "d"})
    items, cursor = await poll(client, {}, 3)
    assert [d["id"] for d in items] == [4] and cursor == 4


async def test_sheet_rows_below_the_rows_seen():
    rows = [["h1", "h2"], ["a", "1"]]
    client = FakeClient(lambda m, p, params, j: {"values": rows})
    trigger = _trigger(google_sheets, "new_row")
    assert await trigger.poll(client, {"spreadsheetId": "s"}, None) == ([], 2)
    rows.append(["b", "2"])
    items, cursor = await trigger.poll(client, {"spreadsheetId": "s"}, 2)
    assert items == [{"rowNumber": 3, "values": ["b", "2"]}] and cursor == 3
    assert trigger.item_id(items[0]) == "3"
    assert client.calls[0][1] == "/v4/spreadsheets/s/values/Sheet1"


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
