"""The unit-test stand-ins of the public kit (``patchbay.testing.FakeClient``, ``registered``,
``sample_lead``) behave as docs/provider-packs.md says."""

from __future__ import annotations

import pytest

from patchbay.providers import meta, pipedrive
from patchbay.testing import ClientCall, FakeClient, registered, sample_lead


async def test_fake_client_answers_in_order_records_calls_and_fails_when_out_of_answers():
    client = FakeClient((201, {"id": "1"}), (204, None))
    first = await client.request("POST", "/things", json={"a": 1})
    assert (first.status, first.json(), first.ok) == (201, {"id": "1"}, True)
    second = await client.request("DELETE", "/things/1", params={"hard": "1"})
    assert (second.status, second.text, second.json()) == (204, "", None)
    assert client.calls == [ClientCall("POST", "/things", None, {"a": 1}, None, None), ClientCall("DELETE", "/things/1", {"hard": "1"}, None, None, None)]
    with pytest.raises(AssertionError, match="no answer left for GET /more"):
        await client.request("GET", "/more")


async def test_fake_client_respond_sees_each_call():
    client = FakeClient(respond=lambda call: {"echo": call.params})
    assert (await client.request("GET", "/x", params={"q": "1"})).json() == {"echo": {"q": "1"}}
    with pytest.raises(TypeError):
        FakeClient((200, {}), respond=lambda call: {})


def test_registered_finds_what_a_pack_registers_or_says_what_is_missing():
    assert registered(pipedrive, "triggers", "pipedrive", "new_deal").name == "new_deal"
    assert registered(pipedrive, "crm_mappers", "pipedrive") is pipedrive.MAPPER
    assert registered(meta, "deletion_identities", "meta") == ("facebook", "meta")
    with pytest.raises(LookupError, match="register_triggers registers nothing for 'pipedrive' named 'nope'"):
        registered(pipedrive, "triggers", "pipedrive", "nope")
    with pytest.raises(LookupError):
        registered(pipedrive, "crm_mappers", "hubspot")


def test_sample_lead_takes_changes():
    assert sample_lead()["email"] == "ada@example.com"
    assert sample_lead(email=None)["email"] is None and sample_lead()["email"] == "ada@example.com"
