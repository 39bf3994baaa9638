"""Close API v1: contacts ``/v1/contact/``, companies are Close *leads* ``/v1/lead/``, deals are
*opportunities* ``/v1/opportunity/`` (values in cents); paged by ``_skip`` while ``has_more``."""

from __future__ import annotations

from typing import Any

from patchbay.providers._shared.crm import RESOURCES, domain_of, ok_json, primary, split_name

NAME = "close"
PATHS = {"contacts": "/v1/contact/", "companies": "/v1/lead/", "deals": "/v1/opportunity/"}


def _map(resource: str, r: dict[str, Any]) -> dict[str, Any]:
    common = {"id": r.get("id"), "createdAt": r.get("date_created"), "updatedAt": r.get("date_updated")}
    if resource == "contacts":
        first, last = split_name(r.get("name"))
        return {
            **common,
            "firstName": first,
            "lastName": last,
            "email": primary(r.get("emails"), "email"),
            "phone": primary(r.get("phones"), "phone"),
            "title": r.get("title"),
            "companyId": r.get("lead_id"),
        }
    if resource == "companies":
        return {**common, "name": r.get("display_name") or r.get("name"), "domain": domain_of(r.get("url")), "industry": None, "phone": None, "employees": None}
    value = r.get("value")
    return {
        **common,
        "name": r.get("note") or r.get("lead_name"),
        "amount": value / 100 if isinstance(value, int | float) else None,
        "currency": r.get("value_currency"),
        "stage": r.get("status_label"),
        "closeDate": r.get("date_won"),
        "companyId": r.get("lead_id"),
    }


class CloseMapper:
    resources = RESOURCES

    async def list(self, client, resource: str, limit: int, cursor: Any):
        skip = int(cursor or 0)
        body = ok_json(await client.request("GET", PATHS[resource], params={"_skip": skip, "_limit": limit}), NAME)
        data = body.get("data") or []
        return [_map(resource, r) for r in data], (skip + len(data) if body.get("has_more") and data else None)

    async def get(self, client, resource: str, item_id: str):
        response = await client.request("GET", f"{PATHS[resource]}{item_id}/")
        if response.status == 404:
            return None
        return _map(resource, ok_json(response, NAME))
