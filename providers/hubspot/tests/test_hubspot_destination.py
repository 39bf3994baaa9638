"""HubSpot as a CRM destination maps a lead onto a contact through the connection client handed to
it (``patchbay.testing.FakeClient`` here)."""

from __future__ import annotations

from patchbay.providers.hubspot.destination import HubSpotDestination
from patchbay.testing import FakeClient, sample_lead


async def test_hubspot_creates_a_contact_or_updates_the_existing_one():
    created = FakeClient((201, {"id": "51"}))
    assert await HubSpotDestination().push(created, sample_lead()) == "51"
    assert created.calls[0][:2] == ("POST", "/crm/v3/objects/contacts")
    assert created.calls[0].json == {"properties": {"email": "ada@example.com", "firstname": "Ada", "lastname": "Lovelace", "phone": "+442079460958"}}
    existing = FakeClient((409, {"message": "Contact already exists. Existing ID: 77"}), (200, {"id": "77"}))
    assert await HubSpotDestination().push(existing, sample_lead()) == "77"
    assert existing.calls[1][:2] == ("PATCH", "/crm/v3/objects/contacts/77")
