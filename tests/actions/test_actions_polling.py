"""The shared cursor helper of the poll triggers (providers/_shared/polling.py)."""

from __future__ import annotations

from patchbay.providers._shared.polling import high_water_mark


async def test_first_poll_sets_the_cursor_then_items_after_it_move_it_on():
    seen_cursors = []

    async def fetch(client, config, cursor):
        seen_cursors.append(cursor)
        return [{"id": "b", "at": 5}, {"id": "a", "at": 3}]

    poll = high_water_mark(fetch, start=lambda client, config: 2, mark=lambda item: item.get("at"))
    assert await poll(None, {}, None) == ([], 2) and seen_cursors == []  # the first poll replays nothing
    items, cursor = await poll(None, {}, 2)
    assert [item["id"] for item in items] == ["a", "b"] and cursor == 5 and seen_cursors == [2]


async def test_cursor_never_moves_backwards():
    async def fetch(client, config, cursor):
        return [{"at": "2020-01-01T00:00:00Z"}]

    poll = high_water_mark(fetch, start=lambda client, config: "x", mark=lambda item: item["at"])
    assert (await poll(None, {}, "2026-01-01T00:00:00Z"))[1] == "2026-01-01T00:00:00Z"
