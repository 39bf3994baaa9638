"""A third-party plugin uses the same hooks as the built-in packs: ``register_webhooks`` for its own
provider's scheme, and ``register_crm_destinations`` for a CRM that leads are pushed to."""

from __future__ import annotations

import hashlib
import hmac
import json

from patchbay import InboundEvent, LeadData, Provider, WebhookHandler, hookimpl
from patchbay.core.testing import create_workspace_with_key
from patchbay.testing import add_connection

SECRET = "acme-secret"


class AcmeWebhooks(WebhookHandler):
    def verify(self, request, secret):
        given = request.headers.get("x-acme-signature", "")
        return hmac.compare_digest(hmac.new(secret.encode(), request.body, hashlib.sha256).hexdigest(), given)

    def events(self, payload):
        return [InboundEvent(type=payload["type"], data=payload, external_id=payload.get("lead"))]

    def routing_keys(self, event):
        return [("tenant", event.data["tenant"])]

    def lead_ref(self, event):
        return event.external_id

    async def fetch_lead(self, client, event):
        return LeadData(external_id=event.external_id, fields={"Email": f"{event.external_id}@acme.test", "Name": "Grace Hopper"})


class Recorder:
    def __init__(self):
        self.pushed = []

    async def push(self, client, lead):
        self.pushed.append((client.connection_id, lead))
        return f"crm-{len(self.pushed)}"

    async def test(self, client):
        return True


class AcmePlugin:
    def __init__(self):
        self.destination = Recorder()

    @hookimpl
    def register_providers(self):
        return [
            Provider(
                name="acme-forms",
                display_name="Acme Forms",
                category="marketing",
                auth_mode="api_key",
                api_base_url="https://api.acme.test",
                webhooks=True,
                capabilities=("proxy", "webhook_receive"),
            ),
            Provider(name="acme-crm", display_name="Acme CRM", category="crm", auth_mode="api_key", api_base_url="https://crm.acme.test"),
        ]

    @hookimpl
    def register_webhooks(self, register):
        register("acme-forms", AcmeWebhooks())

    @hookimpl
    def register_crm_destinations(self, register):
        register("acme-crm", self.destination)


async def test_a_plugin_scheme_and_destination_run_the_whole_pipeline(make_app, aiohttp_client, helpers):
    plugin = AcmePlugin()
    app = make_app(plugins=[plugin], background=True, providers={"acme-forms": {"webhook_secret": SECRET}})
    client = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)
    await add_connection(app, ws["workspace_id"], "acme-forms", meta={"tenant": "t-1"}, credentials={"api_key": "k"})
    crm_connection = await add_connection(app, ws["workspace_id"], "acme-crm", credentials={"api_key": "k2"})
    body = json.dumps({"type": "form.submitted", "tenant": "t-1", "lead": "L7"}).encode()
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert (await client.post("/webhook/acme-forms", data=body, headers={"x-acme-signature": "bad"})).status == 401
    assert (await client.post("/webhook/acme-forms", data=body, headers={"x-acme-signature": signature})).status == 200

    async def synced():
        listed = await (await client.get("/leads", headers=ws["headers"])).json()
        return listed["data"] if listed["data"] and listed["data"][0]["crmSyncStatus"] == "synced" else None

    (lead,) = await helpers.wait_until(synced)
    assert lead["email"] == "l7@acme.test" and lead["fullName"] == "Grace Hopper" and lead["provider"] == "acme-forms"
    ((connection_id, pushed),) = plugin.destination.pushed
    assert connection_id == crm_connection and pushed["id"] == lead["id"] and pushed["email"] == "l7@acme.test"
    detail = await (await client.get(f"/leads/{lead['id']}", headers=ws["headers"])).json()
    assert detail["crmSyncs"][0]["externalId"] == "crm-1"
