"""Salesforce as a CRM destination maps a lead onto a Lead through the connection client handed to
it (a recording fake client here)."""

from __future__ import annotations

import json

from patchbay.providers.salesforce.destination import SalesforceDestination


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


async def test_salesforce_lead_has_its_required_fields():
    client = FakeClient((201, {"id": "00Q1", "success": True}))
    assert await SalesforceDestination().push(client, {**LEAD, "lastName": None, "fullName": None, "firstName": None}) == "00Q1"
    method, path, _, record = client.calls[0]
    assert (method, path) == ("POST", "/services/data/v59.0/sobjects/Lead")
    assert record["LastName"] == "Unknown" and record["Company"] == "Analytical" and record["Email"] == "ada@example.com"

