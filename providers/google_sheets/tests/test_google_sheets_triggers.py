"""Google Sheets' poll trigger: the first poll only counts the rows, later polls answer the new
ones (``patchbay.testing.FakeClient`` stands in for the connection client)."""

from __future__ import annotations

from patchbay.providers import google_sheets
from patchbay.testing import FakeClient, registered


async def test_sheet_rows_below_the_rows_seen():
    rows = [["h1", "h2"], ["a", "1"]]
    client = FakeClient(respond=lambda call: {"values": rows})
    trigger = registered(google_sheets, "triggers", "google-sheet", "new_row")
    assert await trigger.poll(client, {"spreadsheetId": "s"}, None) == ([], 2)
    rows.append(["b", "2"])
    items, cursor = await trigger.poll(client, {"spreadsheetId": "s"}, 2)
    assert items == [{"rowNumber": 3, "values": ["b", "2"]}] and cursor == 3
    assert trigger.item_id(items[0]) == "3"
    assert client.calls[0].path == "/v4/spreadsheets/s/values/Sheet1"
