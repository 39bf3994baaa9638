"""The Meta pack reads Meta's webhook bodies and Graph API leads."""

from __future__ import annotations

from multidict import CIMultiDict

from patchbay import InboundRequest
from patchbay.providers.meta.testing import meta_signature
from patchbay.providers.meta.webhooks import MetaWebhooks, lead_from_graph


def test_events_of_a_meta_body():
    meta = MetaWebhooks()
    payload = {
        "object": "page",
        "entry": [
            {"id": 111, "changes": [{"field": "leadgen", "value": {"leadgen_id": 5, "form_id": "f"}}, {"field": "feed", "value": {"item": "post"}}]},
            {"id": "222", "messaging": [{"message": "hi"}]},
        ],
    }
    lead, feed, other = meta.events(payload)
    assert (lead.type, lead.external_id, lead.data["page_id"]) == ("leadgen", "5", "111")
    assert meta.lead_ref(lead) == "5" and meta.lead_ref(feed) is None
    assert (feed.type, feed.external_id) == ("feed", None)
    assert other.type == "page" and meta.routing_keys(other) == [("page_id", "222")]
    assert meta.events(["not", "an", "object"]) == []


def test_signature_and_handshake():
    meta = MetaWebhooks()
    body = b'{"object":"page"}'
    good = InboundRequest(method="POST", url="/", headers=CIMultiDict({"X-Hub-Signature-256": meta_signature("s", body)}), query={}, body=body)
    assert meta.verify(good, "s") and not meta.verify(good, "t") and not meta.verify(good, None)
    sha1 = InboundRequest(method="POST", url="/", headers=CIMultiDict({"X-Hub-Signature": "sha1=abc"}), query={}, body=body)
    assert not meta.verify(sha1, "s")
    assert meta.handshake({"hub.mode": "subscribe", "hub.verify_token": "v", "hub.challenge": "c"}, "v") == "c"
    assert meta.handshake({"hub.mode": "subscribe", "hub.verify_token": "v", "hub.challenge": "c"}, None) is None
    assert meta.handshake({"hub.mode": "unsubscribe", "hub.verify_token": "v"}, "v") is None


def test_graph_lead_fields():
    lead = lead_from_graph(
        {
            "id": "L1",
            "created_time": "2026-11-01T10:00:00+0000",
            "form_id": "F",
            "field_data": [{"name": "email", "values": ["a@b.co"]}, {"name": "interests", "values": ["x", "y"]}],
        }
    )
    assert lead.external_id == "L1" and lead.form_id == "F" and lead.created_at.isoformat() == "2026-11-01T10:00:00+00:00"
    assert lead.fields == {"email": "a@b.co", "interests": ["x", "y"]}
