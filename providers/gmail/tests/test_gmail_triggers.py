"""Gmail's poll trigger: the first poll only sets the cursor, later polls read the messages received
after it and move the cursor to the newest (``patchbay.testing.FakeClient`` stands in for the
connection client)."""

from __future__ import annotations

from patchbay.providers import gmail
from patchbay.testing import FakeClient, registered

MESSAGES = {
    "m1": {"id": "m1", "threadId": "t1", "internalDate": "2000000", "payload": {"headers": [{"name": "Subject", "value": "Hi"}]}},
    "m2": {"id": "m2", "threadId": "t2", "internalDate": "1500000", "payload": {"headers": []}},
}


def _gmail(call):
    if call.path.endswith("/messages"):
        return {"messages": [{"id": "m1"}, {"id": "m2"}]}
    return MESSAGES[call.path.rsplit("/", 1)[1]]


async def test_new_emails_after_the_cursor_move_it_to_the_newest():
    poll = registered(gmail, "triggers", "google-mail", "new_email").poll
    client = FakeClient(respond=_gmail)
    items, cursor = await poll(client, {"query": "from:ada"}, None)
    assert items == [] and isinstance(cursor, int) and client.calls == []
    items, cursor = await poll(client, {"query": "from:ada"}, 1000)
    assert [call.params["q"] for call in client.calls if call.path.endswith("/messages")] == ["from:ada after:1000"]
    assert [(i["id"], i["receivedAt"], i["subject"]) for i in items] == [("m2", 1500, None), ("m1", 2000, "Hi")] and cursor == 2000
