"""Pipedrive: persons and deals; a poll trigger for new deals."""

from __future__ import annotations

from typing import Any

from patchbay import Action, Trigger
from patchbay.providers._shared.http import call, compact, schema
from patchbay.providers._shared.polling import high_water_mark


def _data(body: Any) -> Any:
    return body.get("data") if isinstance(body, dict) else body


async def create_person(client, inputs: dict[str, Any]) -> Any:
    person = compact(
        {
            "name": inputs["name"],
            "org_id": inputs.get("org_id"),
            "email": [{"value": inputs["email"], "primary": True}] if inputs.get("email") else None,
            "phone": [{"value": inputs["phone"], "primary": True}] if inputs.get("phone") else None,
        }
    )
    return _data(await call(client, "POST", "/v1/persons", json=person))


async def create_deal(client, inputs: dict[str, Any]) -> Any:
    deal = compact({k: inputs.get(k) for k in ("title", "value", "currency", "person_id", "org_id", "stage_id")})
    return _data(await call(client, "POST", "/v1/deals", json=deal))


async def stage_options(client) -> list[dict[str, Any]]:
    stages = _data(await call(client, "GET", "/v1/stages")) or []
    return [{"label": s.get("name"), "value": s.get("id")} for s in stages]


async def _latest_deals(client) -> list[dict[str, Any]]:
    return _data(await call(client, "GET", "/v1/deals", params={"sort": "id DESC", "limit": 100, "status": "all_not_deleted"})) or []


async def _deals_after(client, config: dict[str, Any], cursor: int) -> list[dict[str, Any]]:
    """Deals with an id above the cursor (the highest id seen)."""
    return [d for d in await _latest_deals(client) if int(d.get("id") or 0) > int(cursor)]


async def _highest_id(client, config: dict[str, Any]) -> int:
    return max([int(d["id"]) for d in await _latest_deals(client) if d.get("id") is not None] or [0])


poll_new_deals = high_water_mark(_deals_after, start=_highest_id, mark=lambda deal: int(deal["id"]) if deal.get("id") is not None else None)


def actions() -> list[Action]:
    return [
        Action(
            name="create_person",
            display_name="Create person",
            run=create_person,
            description="Add a person (contact).",
            inputs=schema(("name",), name="string", email="string", phone="string", org_id="integer"),
        ),
        Action(
            name="create_deal",
            display_name="Create deal",
            run=create_deal,
            description="Add a deal.",
            docs_url="https://developers.pipedrive.com/docs/api/v1/Deals#addDeal",
            inputs=schema(("title",), title="string", value="number", currency="string", person_id="integer", org_id="integer", stage_id="integer"),
            options={"stage_id": stage_options},
        ),
    ]


def triggers() -> list[Trigger]:
    return [
        Trigger(
            name="new_deal",
            display_name="New deal",
            kind="poll",
            docs_url="https://pipedrive.readme.io/docs/getting-all-deals",
            poll=poll_new_deals,
            description="A deal was added.",
            sample={"id": 1, "title": "Big deal", "value": 1000, "currency": "EUR"},
        )
    ]
