"""The built-in CRM destinations map a lead onto each CRM's object and call its API through the
connection client handed to them (a recording fake client here)."""

from __future__ import annotations

import json

import pytest

from patchbay.plugins.crm_destinations import (
    GenericWebhookDestination,
    HubSpotDestination,
    PipedriveDestination,
    SalesforceDestination,
    ZohoCrmDestination,
)

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


async def test_salesforce_lead_has_its_required_fields():
    client = FakeClient((201, {"id": "00Q1", "success": True}))
    assert await SalesforceDestination().push(client, {**LEAD, "lastName": None, "fullName": None, "firstName": None}) == "00Q1"
    method, path, _, record = client.calls[0]
    assert (method, path) == ("POST", "/services/data/v59.0/sobjects/Lead")
    assert record["LastName"] == "Unknown" and record["Company"] == "Analytical" and record["Email"] == "ada@example.com"


async def test_pipedrive_creates_a_person_then_a_lead():
    client = FakeClient((201, {"data": {"id": 9}}), (201, {"data": {"id": "uuid-1"}}))
    assert await PipedriveDestination().push(client, LEAD) == "uuid-1"
    assert client.calls[0][3]["email"] == [{"value": "ada@example.com", "primary": True}]
    assert client.calls[1][3] == {"title": "Ada Lovelace (facebook)", "person_id": 9}


async def test_zoho_upserts_on_email_and_reports_refusals():
    client = FakeClient((200, {"data": [{"status": "success", "details": {"id": "z1"}}]}))
    assert await ZohoCrmDestination().push(client, LEAD) == "z1"
    assert client.calls[0][3]["duplicate_check_fields"] == ["Email"]
    refused = FakeClient((200, {"data": [{"status": "error", "message": "bad"}]}))
    with pytest.raises(RuntimeError, match="refused"):
        await ZohoCrmDestination().push(refused, LEAD)


async def test_generic_webhook_posts_the_lead_and_errors_raise():
    client = FakeClient((200, {"id": "remote-5"}))
    assert await GenericWebhookDestination().push(client, LEAD) == "remote-5"
    assert client.calls[0][3] == {"type": "lead", "lead": LEAD}
    failing = FakeClient((500, {"message": "down"}))
    with pytest.raises(RuntimeError, match="500"):
        await GenericWebhookDestination().push(failing, LEAD)
    assert await GenericWebhookDestination().test(FakeClient((204, None))) is True
