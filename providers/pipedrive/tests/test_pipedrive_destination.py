"""Pipedrive as a CRM destination: a person, then a lead (a recording fake client here)."""

from __future__ import annotations

import json

from patchbay.providers.pipedrive.destination import PipedriveDestination


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


async def test_pipedrive_creates_a_person_then_a_lead():
    client = FakeClient((201, {"data": {"id": 9}}), (201, {"data": {"id": "uuid-1"}}))
    assert await PipedriveDestination().push(client, LEAD) == "uuid-1"
    assert client.calls[0][3]["email"] == [{"value": "ada@example.com", "primary": True}]
    assert client.calls[1][3] == {"title": "Ada Lovelace (facebook)", "person_id": 9}

