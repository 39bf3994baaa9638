"""The generic CRM destination posts the lead to the connection's URL (a recording fake client here);
the destinations of named CRMs are tested in their packs (providers/<name>/tests)."""

from __future__ import annotations

import json

import pytest

from patchbay.plugins.crm_destinations import GenericWebhookDestination

LEAD = {"id": "lead-1", "provider": "facebook", "email": "ada@example.com", "phone": "+442079460958", "firstName": "Ada",
        "lastName": "Lovelace", "fullName": "Ada Lovelace", "customFields": {"company_name": "Analytical"}}  # fmt: skip


class Answer:
    def __init__(self, status, body):
        self.status, self.body = status, body

    @property
    def text(self):
        return json.dumps(self.body)

    def json(self):
        return self.body


class FakeClient:
    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = []

    async def request(self, method, path, params=None, json=None):
        self.calls.append((method, path, params or {}, json))
        return Answer(*self.answers.pop(0))


async def test_generic_webhook_posts_the_lead_and_errors_raise():
    client = FakeClient((200, {"id": "remote-5"}))
    assert await GenericWebhookDestination().push(client, LEAD) == "remote-5"
    assert client.calls[0][3] == {"type": "lead", "lead": LEAD}
    failing = FakeClient((500, {"message": "down"}))
    with pytest.raises(RuntimeError, match="500"):
        await GenericWebhookDestination().push(failing, LEAD)
    assert await GenericWebhookDestination().test(FakeClient((204, None))) is True
