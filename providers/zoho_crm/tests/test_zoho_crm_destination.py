"""Zoho CRM as a CRM destination: Leads upserted on the email (a recording fake client here)."""

from __future__ import annotations

import json

import pytest

from patchbay.providers.zoho_crm.destination import ZohoCrmDestination


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


async def test_zoho_upserts_on_email_and_reports_refusals():
    client = FakeClient((200, {"data": [{"status": "success", "details": {"id": "z1"}}]}))
    assert await ZohoCrmDestination().push(client, LEAD) == "z1"
    assert client.calls[0][3]["duplicate_check_fields"] == ["Email"]
    refused = FakeClient((200, {"data": [{"status": "error", "message": "bad"}]}))
    with pytest.raises(RuntimeError, match="refused"):
        await ZohoCrmDestination().push(refused, LEAD)

