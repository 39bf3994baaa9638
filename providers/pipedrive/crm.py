"""Pipedrive API v1: ``/v1/persons``, ``/v1/organizations``, ``/v1/deals``, paged by ``start``."""

from __future__ import annotations

from typing import Any

from patchbay.providers._shared.crm import RESOURCES, ok_json, primary, ref_id, split_name, utc_iso

NAME = "pipedrive"
PATHS = {"contacts": "/v1/persons", "companies": "/v1/organizations", "deals": "/v1/deals"}


def _map(resource: str, r: dict[str, Any]) -> dict[str, Any]:
    common = {"id": r.get("id"), "createdAt": utc_iso(r.get("add_time")), "updatedAt": utc_iso(r.get("update_time"))}
    if resource == "contacts":
        first, last = r.get("first_name"), r.get("last_name")
        if not first and not last:
            first, last = split_name(r.get("name"))
        return {
            **common,
            "firstName": first,
            "lastName": last,
            "email": primary(r.get("email")),
            "phone": primary(r.get("phone")),
            "title": r.get("job_title"),
            "companyId": ref_id(r.get("org_id")),
        }
    if resource == "companies":
        return {**common, "name": r.get("name"), "domain": None, "industry": r.get("industry"), "phone": None, "employees": r.get("people_count")}
    return {
        **common,
        "name": r.get("title"),
        "amount": r.get("value"),
        "currency": r.get("currency"),
        "stage": r.get("stage_id") and str(r.get("stage_id")),
        "closeDate": r.get("expected_close_date") or r.get("close_time", "")[:10] or None,
        "companyId": ref_id(r.get("org_id")),
    }


class PipedriveMapper:
    resources = RESOURCES

    async def list(self, client, resource: str, limit: int, cursor: Any):
        body = ok_json(await client.request("GET", PATHS[resource], params={"start": int(cursor or 0), "limit": limit}), NAME)
        items = [_map(resource, r) for r in body.get("data") or []]
        pagination = (body.get("additional_data") or {}).get("pagination") or {}
        return items, (pagination.get("next_start") if pagination.get("more_items_in_collection") else None)

    async def get(self, client, resource: str, item_id: str):
        response = await client.request("GET", f"{PATHS[resource]}/{item_id}")
        if response.status == 404:
            return None
        body = ok_json(response, NAME)
        return _map(resource, body["data"]) if body and body.get("data") else None
