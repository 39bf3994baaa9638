"""Pipedrive as a CRM destination: a person, then a lead linked to it."""

from __future__ import annotations

from patchbay.providers._shared.destinations import call, compact, names


class PipedriveDestination:
    """A Pipedrive person, then a lead linked to it."""

    async def push(self, client, lead):
        first, last = names(lead)
        name = lead.get("fullName") or " ".join(p for p in (first, last) if p) or lead.get("email") or "Unknown"
        person = compact(
            {
                "name": name,
                "email": [{"value": lead["email"], "primary": True}] if lead.get("email") else None,
                "phone": [{"value": lead["phone"], "primary": True}] if lead.get("phone") else None,
            }
        )
        _, body = await call(client, "POST", "/v1/persons", json=person)
        person_id = body["data"]["id"]
        _, body = await call(client, "POST", "/v1/leads", json={"title": f"{name} ({lead.get('provider')})", "person_id": person_id})
        return str(body["data"]["id"])

    async def test(self, client):
        await call(client, "GET", "/v1/users/me")
        return True
