"""Stripe's poll triggers: the first poll only sets the cursor, later polls answer what is new and
move the cursor on (``patchbay.testing.FakeClient`` stands in for the connection client)."""

from __future__ import annotations

from patchbay.providers import stripe
from patchbay.testing import FakeClient, registered


async def test_stripe_new_charges_use_created_as_cursor():
    charges = [{"id": "ch_2", "created": 200}, {"id": "ch_1", "created": 150}]
    client = FakeClient(respond=lambda call: {"data": [c for c in charges if c["created"] > call.params["created[gt]"]]})
    poll = registered(stripe, "triggers", "stripe", "new_charge").poll
    items, cursor = await poll(client, {}, None)
    assert items == [] and isinstance(cursor, int) and client.calls == []
    items, cursor = await poll(client, {}, 100)
    assert [i["id"] for i in items] == ["ch_1", "ch_2"] and cursor == 200
    items, cursor = await poll(client, {}, cursor)
    assert items == [] and cursor == 200
