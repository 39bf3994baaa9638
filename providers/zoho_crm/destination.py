"""Zoho CRM as a CRM destination: Leads upserted on the email."""

from __future__ import annotations

from patchbay.providers._shared.destinations import call, compact, names


class ZohoCrmDestination:
    """A Zoho CRM Lead, upserted on the email."""

    async def push(self, client, lead):
        first, last = names(lead)
        record = compact(
            {"First_Name": first, "Last_Name": last or "Unknown", "Email": lead.get("email"), "Phone": lead.get("phone"), "Lead_Source": lead.get("provider")}
        )
        _, body = await call(client, "POST", "/crm/v5/Leads/upsert", json={"data": [record], "duplicate_check_fields": ["Email"]})
        item = (body.get("data") or [{}])[0]
        if item.get("status") != "success":
            raise RuntimeError(f"Zoho CRM refused the lead: {item}")
        return str(item["details"]["id"])

    async def test(self, client):
        await call(client, "GET", "/crm/v5/org")
        return True
