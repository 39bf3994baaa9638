"""Stripe and Slack webhooks through the whole pipeline (the schemes themselves are tested in their
packs: providers/stripe/tests, providers/slack/tests, providers/hubspot/tests)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

from patchbay.core.testing import create_workspace_with_key
from patchbay.core.webhooks.models import WebhookEvent
from patchbay.testing import add_connection

SECRET = "whsec_scheme_secret"


def stripe_header(body: bytes, secret=SECRET, at=None) -> str:
    t = str(int(at or time.time()))
    return f"t={t},v1={hmac.new(secret.encode(), t.encode() + b'.' + body, hashlib.sha256).hexdigest()}"


async def test_stripe_events_flow_through_the_pipeline(make_app, aiohttp_client, helpers):
    app = make_app(background=True, providers={"stripe": {"webhook_secret": SECRET}, "slack": {"webhook_secret": SECRET}})
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    await add_connection(app, ws["workspace_id"], "stripe", meta={"stripe_account_id": "acct_9"})
    body = b'{"id":"evt_1","type":"invoice.paid","account":"acct_9"}'
    assert (await client.post("/webhook/stripe", data=body)).status == 401
    ok = await client.post("/webhook/stripe", data=body, headers={"Stripe-Signature": stripe_header(body)})
    assert ok.status == 200

    async def processed():
        rows = await helpers.event_rows(app)
        return rows if rows and rows[0].status != "RECEIVED" else None

    (row,) = await helpers.wait_until(processed)
    assert isinstance(row, WebhookEvent) and row.status == "PROCESSED" and row.workspace_id == ws["workspace_id"] and row.event_type == "invoice.paid"
    # Slack's url_verification is answered in the response and nothing is stored
    challenge = json.dumps({"type": "url_verification", "challenge": "c-1"}).encode()
    ts = str(int(time.time()))
    signature = "v0=" + hmac.new(SECRET.encode(), f"v0:{ts}:".encode() + challenge, hashlib.sha256).hexdigest()
    answer = await client.post("/webhook/slack", data=challenge, headers={"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature})
    assert (await answer.json()) == {"challenge": "c-1"}
    assert len(await helpers.event_rows(app)) == 1
