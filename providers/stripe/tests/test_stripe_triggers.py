"""Stripe's poll triggers: the first poll only sets the cursor, later polls answer what is new and
move the cursor on (a fake client stands in for the connection client)."""

from __future__ import annotations

import json

from patchbay.providers.stripe import actions as stripe


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

