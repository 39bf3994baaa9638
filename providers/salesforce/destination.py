"""Salesforce as a CRM destination: leads become Lead records."""

from __future__ import annotations

from patchbay.providers._shared.destinations import call, compact, names


class SalesforceDestination:
    """A Salesforce Lead (LastName and Company are required there: placeholders when unknown)."""

    API = "/services/data/v59.0"

    async def push(self, client, lead):
        first, last = names(lead)
        custom = lead.get("customFields") or {}
        record = compact(
            {
                "FirstName": first,
                "LastName": last or "Unknown",
                "Email": lead.get("email"),
                "Phone": lead.get("phone"),
                "Company": custom.get("company_name") or custom.get("company") or "Unknown",
                "LeadSource": lead.get("provider"),
            }
        )
        _, body = await call(client, "POST", f"{self.API}/sobjects/Lead", json=record)
        return str(body["id"])

    async def test(self, client):
        await call(client, "GET", f"{self.API}/limits")
        return True
