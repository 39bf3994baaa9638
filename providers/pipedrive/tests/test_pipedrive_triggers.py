"""Pipedrive's poll trigger: the first poll only sets the cursor, later polls answer what is new
and move the cursor on (``patchbay.testing.FakeClient`` stands in for the connection client)."""

from __future__ import annotations

from patchbay.providers import pipedrive
from patchbay.testing import FakeClient, registered


async def test_pipedrive_new_deals_above_the_highest_id_seen():
    deals = [{"id": 3, "title": "c"}, {"id": 2, "title": "b"}, {"id": 1, "title": "a"}]
    client = FakeClient(respond=lambda call: {"data": deals})
    poll = registered(pipedrive, "triggers", "pipedrive", "new_deal").poll
    assert await poll(client, {}, None) == ([], 3)
    deals.insert(0, {"id": 4, "title": "d"})
    items, cursor = await poll(client, {}, 3)
    assert [d["id"] for d in items] == [4] and cursor == 4
