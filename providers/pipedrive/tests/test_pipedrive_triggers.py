"""Pipedrive's poll trigger: the first poll only sets the cursor, later polls answer what is new
and move the cursor on (a fake client stands in for the connection client)."""

from __future__ import annotations

import json

from patchbay.providers.pipedrive import actions as pipedrive


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


async def test_pipedrive_new_deals_above_the_highest_id_seen():
    deals = [{"id": 3, "title": "c"}, {"id": 2, "title": "b"}, {"id": 1, "title": "a"}]
    client = FakeClient(lambda m, p, params, j: {"data": deals})
    poll = _trigger(pipedrive, "new_deal").poll
    assert await poll(client, {}, None) == ([], 3)
    deals.insert(0, {"id": 4, "title": "d"})
    items, cursor = await poll(client, {}, 3)
    assert [d["id"] for d in items] == [4] and cursor == 4

