"""HubSpot as a CRM destination: leads become contacts."""

from __future__ import annotations

import re

from patchbay.providers._shared.destinations import call, compact, names


class HubSpotDestination:
    """A HubSpot contact, updated when HubSpot reports the email exists (409)."""

    async def push(self, client, lead):
        first, last = names(lead)
        properties = compact({"email": lead.get("email"), "firstname": first, "lastname": last, "phone": lead.get("phone")})
        status, body = await call(client, "POST", "/crm/v3/objects/contacts", json={"properties": properties}, ok=(409,))
        if status == 409:
            match = re.search(r"Existing ID:\s*(\d+)", str(body.get("message", "")))
            if not match:
                raise RuntimeError(f"HubSpot reported a conflict without the existing id: {body}")
            await call(client, "PATCH", f"/crm/v3/objects/contacts/{match.group(1)}", json={"properties": properties})
            return match.group(1)
        return str(body["id"])

    async def test(self, client):
        await call(client, "GET", "/crm/v3/objects/contacts", params={"limit": 1})
        return True
