"""Built-in CRM destinations: leads pushed to HubSpot, Salesforce, Pipedrive and Zoho CRM through
the workspace's connection to them, and to any HTTPS endpoint through the ``generic-webhook``
provider (a connection whose ``url`` parameter is the endpoint).

Each destination maps the cleaned lead (``email``, ``phone``, ``firstName``, ``lastName``,
``fullName``, ``customFields``...) onto the CRM's lead or contact object, creates it (or updates the
existing record the CRM reports as a duplicate) and returns the CRM's record id.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from patchbay import Provider, hookimpl


async def _call(client: Any, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None, ok: tuple[int, ...] = ()) -> tuple[int, Any]:
    response = await client.request(method, path, params=dict(params or {}), json=json)
    if not (200 <= response.status < 300 or response.status in ok):
        raise RuntimeError(f"{method} {path} answered {response.status}: {response.text[:300]}")
    try:
        body = response.json()
    except ValueError:
        body = {}
    return response.status, body if body is not None else {}


def _names(lead: Mapping[str, Any]) -> tuple[str | None, str | None]:
    first, last = lead.get("firstName"), lead.get("lastName")
    if not (first or last) and lead.get("fullName"):
        first, _, last = str(lead["fullName"]).partition(" ")
    return first or None, last or None


def _compact(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value not in (None, "", [], {})}


class HubSpotDestination:
    """A HubSpot contact, updated when HubSpot reports the email exists (409)."""

    async def push(self, client, lead):
        first, last = _names(lead)
        properties = _compact({"email": lead.get("email"), "firstname": first, "lastname": last, "phone": lead.get("phone")})
        status, body = await _call(client, "POST", "/crm/v3/objects/contacts", json={"properties": properties}, ok=(409,))
        if status == 409:
            match = re.search(r"Existing ID:\s*(\d+)", str(body.get("message", "")))
            if not match:
                raise RuntimeError(f"HubSpot reported a conflict without the existing id: {body}")
            await _call(client, "PATCH", f"/crm/v3/objects/contacts/{match.group(1)}", json={"properties": properties})
            return match.group(1)
        return str(body["id"])

    async def test(self, client):
        await _call(client, "GET", "/crm/v3/objects/contacts", params={"limit": 1})
        return True


class SalesforceDestination:
    """A Salesforce Lead (LastName and Company are required there: placeholders when unknown)."""

    API = "/services/data/v59.0"

    async def push(self, client, lead):
        first, last = _names(lead)
        custom = lead.get("customFields") or {}
        record = _compact({
            "FirstName": first, "LastName": last or "Unknown", "Email": lead.get("email"), "Phone": lead.get("phone"),
            "Company": custom.get("company_name") or custom.get("company") or "Unknown", "LeadSource": lead.get("provider"),
        })  # fmt: skip
        _, body = await _call(client, "POST", f"{self.API}/sobjects/Lead", json=record)
        return str(body["id"])

    async def test(self, client):
        await _call(client, "GET", f"{self.API}/limits")
        return True


class PipedriveDestination:
    """A Pipedrive person, then a lead linked to it."""

    async def push(self, client, lead):
        first, last = _names(lead)
        name = lead.get("fullName") or " ".join(p for p in (first, last) if p) or lead.get("email") or "Unknown"
        person = _compact({
            "name": name,
            "email": [{"value": lead["email"], "primary": True}] if lead.get("email") else None,
            "phone": [{"value": lead["phone"], "primary": True}] if lead.get("phone") else None,
        })  # fmt: skip
        _, body = await _call(client, "POST", "/v1/persons", json=person)
        person_id = body["data"]["id"]
        _, body = await _call(client, "POST", "/v1/leads", json={"title": f"{name} ({lead.get('provider')})", "person_id": person_id})
        return str(body["data"]["id"])

    async def test(self, client):
        await _call(client, "GET", "/v1/users/me")
        return True


class ZohoCrmDestination:
    """A Zoho CRM Lead, upserted on the email."""

    async def push(self, client, lead):
        first, last = _names(lead)
        record = _compact({"First_Name": first, "Last_Name": last or "Unknown", "Email": lead.get("email"), "Phone": lead.get("phone"), "Lead_Source": lead.get("provider")})
        _, body = await _call(client, "POST", "/crm/v5/Leads/upsert", json={"data": [record], "duplicate_check_fields": ["Email"]})
        item = (body.get("data") or [{}])[0]
        if item.get("status") != "success":
            raise RuntimeError(f"Zoho CRM refused the lead: {item}")
        return str(item["details"]["id"])

    async def test(self, client):
        await _call(client, "GET", "/crm/v5/org")
        return True


class GenericWebhookDestination:
    """POSTs the cleaned lead as JSON to the connection's URL; the answer's ``id`` (if any) is the
    record id."""

    async def push(self, client, lead):
        _, body = await _call(client, "POST", "", json={"type": "lead", "lead": dict(lead)})
        return str(body.get("id")) if isinstance(body, dict) and body.get("id") is not None else lead["id"]

    async def test(self, client):
        await _call(client, "POST", "", json={"type": "test"})
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
    register("hubspot", HubSpotDestination())
    register("salesforce", SalesforceDestination())
    register("pipedrive", PipedriveDestination())
    register("zoho-crm", ZohoCrmDestination())
    register("generic-webhook", GenericWebhookDestination())
