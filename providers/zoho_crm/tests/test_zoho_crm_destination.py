"""Zoho CRM as a CRM destination: Leads upserted on the email (``patchbay.testing.FakeClient`` here)."""

from __future__ import annotations

import pytest

from patchbay.providers.zoho_crm.destination import ZohoCrmDestination
from patchbay.testing import FakeClient, sample_lead


async def test_zoho_upserts_on_email_and_reports_refusals():
    client = FakeClient((200, {"data": [{"status": "success", "details": {"id": "z1"}}]}))
    assert await ZohoCrmDestination().push(client, sample_lead()) == "z1"
    assert client.calls[0].json["duplicate_check_fields"] == ["Email"]
    refused = FakeClient((200, {"data": [{"status": "error", "message": "bad"}]}))
    with pytest.raises(RuntimeError, match="refused"):
        await ZohoCrmDestination().push(refused, sample_lead())
