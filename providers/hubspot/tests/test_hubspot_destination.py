"""HubSpot as a CRM destination maps a lead onto a contact through the connection client handed to
it (a recording fake client here)."""

from __future__ import annotations

import json

from patchbay.providers.hubspot.destination import HubSpotDestination


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


async def test_hubspot_creates_a_contact_or_updates_the_existing_one():
    created = FakeClient((201, {"id": "51"}))
    assert await HubSpotDestination().push(created, LEAD) == "51"
    assert created.calls[0][:2] == ("POST", "/crm/v3/objects/contacts")
    assert created.calls[0][3] == {"properties": {"email": "ada@example.com", "firstname": "Ada", "lastname": "Lovelace", "phone": "+442079460958"}}
    existing = FakeClient((409, {"message": "Contact already exists. Existing ID: 77"}), (200, {"id": "77"}))
    assert await HubSpotDestination().push(existing, LEAD) == "77"
    assert existing.calls[1][:2] == ("PATCH", "/crm/v3/objects/contacts/77")

