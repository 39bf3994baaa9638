"""A third-party payment provider through the ``register_payment_providers`` hook: the first
configured provider serves checkout, portal and the webhook with its own signature header."""

from __future__ import annotations

import json

from sqlalchemy import select

from patchbay import CheckoutSession, PaymentEvent, PaymentProvider, SubscriptionState, WebhookVerificationError, hookimpl
from patchbay.core.appkeys import SERVICES
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.workspaces.models import Workspace


class _Coins(PaymentProvider):
    signature_header = "X-Coins-Signature"

    def __init__(self) -> None:
        self.checkouts = []

    def configured(self, ctx):
        return ctx.config is None  # no [acme] section exists: always on

    def price_configured(self, ctx, plan):
        return plan == "professional"

    async def create_checkout(self, ctx, request):
        self.checkouts.append(request)
        return CheckoutSession(id="co_1", url=f"https://pay.example.test/{request.workspace_id}")

    async def create_portal(self, ctx, *, customer_id, return_url):
        return f"https://pay.example.test/portal/{customer_id}"

    def parse_webhook(self, ctx, *, payload, signature, now=None):
        if signature != "trusted":
            raise WebhookVerificationError("Bad coins signature")
        body = json.loads(payload)
        state = SubscriptionState(subscription_id="s1", customer_id="c1", status="active", plan="professional")
        return PaymentEvent(
            id=body["id"], type="paid", kind="checkout_completed", workspace_id=body["workspace"], customer_id="c1", plan="professional", subscription=state
        )


class _Plugin:
    def __init__(self) -> None:
        self.provider = _Coins()

    @hookimpl
    def register_payment_providers(self, register):
        register("acme", self.provider)


async def test_third_party_payment_provider(aiohttp_client, make_app):
    plugin = _Plugin()
    app = make_app(plugins=[plugin])
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    plan = await (await client.get("/connect/v1/billing/plan", headers=ws["headers"])).json()
    assert (plan["paymentProvider"], plan["availablePlans"]) == ("acme", ["professional"])
    checkout = await client.post("/connect/v1/billing/checkout", json={"plan": "professional"}, headers=ws["headers"])
    assert (await checkout.json())["url"] == f"https://pay.example.test/{ws['workspace_id']}"
    assert plugin.provider.checkouts[0].success_url.endswith("?checkout=success")

    body = json.dumps({"id": "e1", "workspace": ws["workspace_id"]}).encode()
    assert (await client.post("/billing/webhook", data=body, headers={"X-Coins-Signature": "forged"})).status == 400
    assert (await client.post("/billing/webhook", data=body, headers={"X-Coins-Signature": "trusted"})).status == 200
    async with app[SERVICES].db.session() as session:
        assert await session.scalar(select(Workspace.plan).where(Workspace.id == ws["workspace_id"])) == "professional"
    portal = await client.post("/connect/v1/billing/portal", headers=ws["headers"])
    assert (await portal.json())["url"] == "https://pay.example.test/portal/c1"
