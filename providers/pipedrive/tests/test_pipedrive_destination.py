"""Pipedrive as a CRM destination: a person, then a lead (``patchbay.testing.FakeClient`` here)."""

from __future__ import annotations

from patchbay.providers.pipedrive.destination import PipedriveDestination
from patchbay.testing import FakeClient, sample_lead


async def test_pipedrive_creates_a_person_then_a_lead():
    client = FakeClient((201, {"data": {"id": 9}}), (201, {"data": {"id": "uuid-1"}}))
    assert await PipedriveDestination().push(client, sample_lead()) == "uuid-1"
    assert client.calls[0].json["email"] == [{"value": "ada@example.com", "primary": True}]
    assert client.calls[1].json == {"title": "Ada Lovelace (facebook)", "person_id": 9}
