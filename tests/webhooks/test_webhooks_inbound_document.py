"""The inbound webhook routes' real answers are what /openapi.json declares: the handshake's
challenge as text, a stored event's receipt as JSON ``{received, id}`` (written by hand on the hot
path, so this test is what keeps it and its model together), a provider's verification answer; the
privacy policy's page and redirect likewise."""

from __future__ import annotations

import json

from patchbay.providers.meta.testing import meta_signature, page_event_payload
from tests.core.openapi_answers import assert_documented

APP_SECRET = "meta-app-secret"


async def test_the_handshake_and_the_receipt_are_what_the_document_says(aiohttp_client, wh_app):
    client = await aiohttp_client(wh_app(background=False))
    document = await (await client.get("/openapi.json")).json()
    handshake = await client.get("/webhook/facebook", params={"hub.mode": "subscribe", "hub.verify_token": "verify-me", "hub.challenge": "42"})
    assert handshake.status == 200 and await handshake.text() == "42"
    await assert_documented(document, "GET", "/webhook/{providerType}", handshake)
    body = json.dumps(page_event_payload("page-A")).encode()
    receipt = await client.post("/webhook/facebook", data=body, headers={"x-hub-signature-256": meta_signature(APP_SECRET, body)})
    assert receipt.status == 200
    await assert_documented(document, "POST", "/webhook/{providerType}", receipt)
    answer = await receipt.json()
    assert answer["received"] is True and answer["id"]
    receipt_schema = document["components"]["schemas"]["InboundWebhookReceipt"]
    assert receipt_schema["required"] == ["received", "id"] and receipt_schema["additionalProperties"] is False


async def test_the_privacy_policy_page_and_redirect_are_what_the_document_says(aiohttp_client, make_app):
    from patchbay.core.settings import ComplianceSettings

    page_app = await aiohttp_client(make_app())
    document = await (await page_app.get("/openapi.json")).json()
    page = await page_app.get("/compliance/privacy-policy")
    assert page.status == 200 and "Privacy policy" in await page.text()
    await assert_documented(document, "GET", "/compliance/privacy-policy", page)
    redirecting = await aiohttp_client(make_app(compliance=ComplianceSettings(privacy_policy_url="https://example.com/privacy")))
    moved = await redirecting.get("/compliance/privacy-policy", allow_redirects=False)
    assert moved.status == 302 and moved.headers["Location"] == "https://example.com/privacy"
    await assert_documented(document, "GET", "/compliance/privacy-policy", moved)
