"""Salesforce as a CRM destination maps a lead onto a Lead through the connection client handed to
it (``patchbay.testing.FakeClient`` here)."""

from __future__ import annotations

from patchbay.providers.salesforce.destination import SalesforceDestination
from patchbay.testing import FakeClient, sample_lead


async def test_salesforce_lead_has_its_required_fields():
    client = FakeClient((201, {"id": "00Q1", "success": True}))
    assert await SalesforceDestination().push(client, sample_lead(lastName=None, fullName=None, firstName=None)) == "00Q1"
    method, path, *_ = client.calls[0]
    assert (method, path) == ("POST", "/services/data/v59.0/sobjects/Lead")
    record = client.calls[0].json
    assert record["LastName"] == "Unknown" and record["Company"] == "Analytical" and record["Email"] == "ada@example.com"
