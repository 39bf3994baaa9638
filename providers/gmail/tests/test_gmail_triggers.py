"""Gmail's poll trigger: the first poll only sets the cursor, later polls read the messages received
after it and move the cursor to the newest (a fake client stands in for the connection client)."""

from __future__ import annotations

import json

from patchbay.providers.gmail import actions as gmail

MESSAGES = {"m1": {"id": "m1", "threadId": "t1", "internalDate": "2000000", "payload": {"headers": [{"name": "Subject", "value": "Hi"}]}},
            "m2": {"id": "m2", "threadId": "t2", "internalDate": "1500000", "payload": {"headers": []}}}  # fmt: skip


class Answer:
    status = 200

    def __init__(self, body):
        self.body = body

    def json(self):
        return self.body

    @property
    def text(self):
        return json.dumps(self.body)


class FakeGmail:
    def __init__(self):
        self.queries = []

    async def request(self, method, path, *, params=None, json=None, data=None, headers=None):
        if path.endswith("/messages"):
            self.queries.append(params["q"])
            return Answer({"messages": [{"id": "m1"}, {"id": "m2"}]})
        return Answer(MESSAGES[path.rsplit("/", 1)[1]])


async def test_new_emails_after_the_cursor_move_it_to_the_newest():
    poll = next(t for t in gmail.triggers() if t.name == "new_email").poll
    client = FakeGmail()
    items, cursor = await poll(client, {"query": "from:ada"}, None)
    assert items == [] and isinstance(cursor, int) and client.queries == []
    items, cursor = await poll(client, {"query": "from:ada"}, 1000)
    assert client.queries == ["from:ada after:1000"]
    assert [(i["id"], i["receivedAt"], i["subject"]) for i in items] == [("m2", 1500, None), ("m1", 2000, "Hi")] and cursor == 2000
