"""Google Sheets' poll trigger: the first poll only counts the rows, later polls answer the new
ones (a fake client stands in for the connection client)."""

from __future__ import annotations

import json

from patchbay.providers.google_sheets import actions as google_sheets


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

