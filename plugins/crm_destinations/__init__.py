"""The generic CRM destination: leads POSTed as JSON to any HTTPS endpoint through the
``generic-webhook`` provider (a connection whose ``url`` parameter is the endpoint).

The destinations of a named CRM (HubSpot, Salesforce, Pipedrive, Zoho CRM) live in that
provider's pack (``providers/<name>/destination.py``).
"""

from __future__ import annotations

from patchbay import Provider, hookimpl
from patchbay.providers._shared.destinations import call


class GenericWebhookDestination:
    """POSTs the cleaned lead as JSON to the connection's URL; the answer's ``id`` (if any) is the
    record id."""

    async def push(self, client, lead):
        _, body = await call(client, "POST", "", json={"type": "lead", "lead": dict(lead)})
        return str(body.get("id")) if isinstance(body, dict) and body.get("id") is not None else lead["id"]

    async def test(self, client):
        await call(client, "POST", "", json={"type": "test"})
        return True


GENERIC_WEBHOOK = Provider(
    name="generic-webhook",
    display_name="Generic webhook (CRM destination)",
    category="crm",
    auth_mode="api_key",
    api_base_url="{url}",
    connection_params=("url",),
    credential_headers={"authorization": "Bearer {api_key}"},
    capabilities=("proxy",),
)


@hookimpl
def register_providers():
    return [GENERIC_WEBHOOK]


@hookimpl
def register_crm_destinations(register):
    register("generic-webhook", GenericWebhookDestination())
