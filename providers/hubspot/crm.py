"""HubSpot CRM v3 objects API: ``/crm/v3/objects/{contacts,companies,deals}``, paged by ``after``."""

from __future__ import annotations

from typing import Any

from patchbay.providers._shared.crm import RESOURCES, ok_json

NAME = "hubspot"
OBJECTS = {"contacts": "contacts", "companies": "companies", "deals": "deals"}
PROPERTIES = {
    "contacts": "firstname,lastname,email,phone,jobtitle,associatedcompanyid,createdate,lastmodifieddate",
    "companies": "name,domain,industry,phone,numberofemployees,createdate,hs_lastmodifieddate",
    "deals": "dealname,amount,deal_currency_code,dealstage,closedate,createdate,hs_lastmodifieddate",
}


def _map(resource: str, obj: dict[str, Any]) -> dict[str, Any]:
    p = obj.get("properties") or {}
    common = {
        "id": obj.get("id"),
        "createdAt": obj.get("createdAt") or p.get("createdate"),
        "updatedAt": obj.get("updatedAt") or p.get("lastmodifieddate") or p.get("hs_lastmodifieddate"),
    }
    if resource == "contacts":
        return {
            **common,
            "firstName": p.get("firstname"),
            "lastName": p.get("lastname"),
            "email": p.get("email"),
            "phone": p.get("phone"),
            "title": p.get("jobtitle"),
            "companyId": p.get("associatedcompanyid"),
        }
    if resource == "companies":
        return {
            **common,
            "name": p.get("name"),
            "domain": p.get("domain"),
            "industry": p.get("industry"),
            "phone": p.get("phone"),
            "employees": p.get("numberofemployees"),
        }
    close = p.get("closedate")
    return {
        **common,
        "name": p.get("dealname"),
        "amount": p.get("amount"),
        "currency": p.get("deal_currency_code"),
        "stage": p.get("dealstage"),
        "closeDate": close[:10] if close else None,
        "companyId": None,
    }


class HubSpotMapper:
    resources = RESOURCES

    async def list(self, client, resource: str, limit: int, cursor: Any):
        params = {"limit": limit, "properties": PROPERTIES[resource], "archived": "false"}
        if cursor:
            params["after"] = cursor
        body = ok_json(await client.request("GET", f"/crm/v3/objects/{OBJECTS[resource]}", params=params), NAME)
        items = [_map(resource, obj) for obj in body.get("results", [])]
        after = ((body.get("paging") or {}).get("next") or {}).get("after")
        return items, after

    async def get(self, client, resource: str, item_id: str):
        response = await client.request("GET", f"/crm/v3/objects/{OBJECTS[resource]}/{item_id}", params={"properties": PROPERTIES[resource]})
        if response.status == 404:
            return None
        return _map(resource, ok_json(response, NAME))
