"""Zoho CRM API v2: ``/crm/v2/{Contacts,Accounts,Deals}``, paged by ``page`` while
``info.more_records``; an empty module answers 204."""

from __future__ import annotations

from typing import Any

from patchbay.providers._shared.crm import RESOURCES, domain_of, ok_json, ref_id

NAME = "zoho-crm"
MODULES = {"contacts": "Contacts", "companies": "Accounts", "deals": "Deals"}


def _map(resource: str, r: dict[str, Any]) -> dict[str, Any]:
    common = {"id": r.get("id"), "createdAt": r.get("Created_Time"), "updatedAt": r.get("Modified_Time")}
    if resource == "contacts":
        return {
            **common,
            "firstName": r.get("First_Name"),
            "lastName": r.get("Last_Name"),
            "email": r.get("Email"),
            "phone": r.get("Phone") or r.get("Mobile"),
            "title": r.get("Title"),
            "companyId": ref_id(r.get("Account_Name")),
        }
    if resource == "companies":
        return {
            **common,
            "name": r.get("Account_Name"),
            "domain": domain_of(r.get("Website")),
            "industry": r.get("Industry"),
            "phone": r.get("Phone"),
            "employees": r.get("Employees"),
        }
    return {
        **common,
        "name": r.get("Deal_Name"),
        "amount": r.get("Amount"),
        "currency": r.get("Currency"),
        "stage": r.get("Stage"),
        "closeDate": r.get("Closing_Date"),
        "companyId": ref_id(r.get("Account_Name")),
    }


class ZohoCrmMapper:
    resources = RESOURCES

    async def list(self, client, resource: str, limit: int, cursor: Any):
        page = int(cursor or 1)
        body = ok_json(await client.request("GET", f"/crm/v2/{MODULES[resource]}", params={"page": page, "per_page": limit}), NAME) or {}
        items = [_map(resource, r) for r in body.get("data") or []]
        return items, (page + 1 if (body.get("info") or {}).get("more_records") else None)

    async def get(self, client, resource: str, item_id: str):
        response = await client.request("GET", f"/crm/v2/{MODULES[resource]}/{item_id}")
        if response.status in (204, 404):
            return None
        body = ok_json(response, NAME) or {}
        data = body.get("data") or []
        return _map(resource, data[0]) if data else None
