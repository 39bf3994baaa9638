"""HubSpot CRM v3: contacts and deals; a poll trigger for new contacts and the webhook trigger of
contact creation. update_contact, a plain PATCH, is declared in actions.toml."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from patchbay import Action, Trigger
from patchbay.providers._shared.http import call, compact, now_epoch, schema
from patchbay.providers._shared.polling import high_water_mark

CONTACT_FIELDS = ("email", "firstname", "lastname", "phone", "company")


async def create_contact(client, inputs: dict[str, Any]) -> Any:
    properties = compact({**{k: inputs.get(k) for k in CONTACT_FIELDS}, **(inputs.get("properties") or {})})
    return await call(client, "POST", "/crm/v3/objects/contacts", json={"properties": properties})


async def find_contact(client, inputs: dict[str, Any]) -> Any:
    body = {"filterGroups": [{"filters": [{"propertyName": "email", "operator": "EQ", "value": inputs["email"]}]}], "limit": 1}
    results = (await call(client, "POST", "/crm/v3/objects/contacts/search", json=body) or {}).get("results") or []
    return results[0] if results else None


async def create_deal(client, inputs: dict[str, Any]) -> Any:
    properties = compact(
        {
            "dealname": inputs["dealname"],
            "amount": inputs.get("amount"),
            "pipeline": inputs.get("pipeline"),
            "dealstage": inputs.get("dealstage"),
            **(inputs.get("properties") or {}),
        }
    )
    return await call(client, "POST", "/crm/v3/objects/deals", json={"properties": properties})


async def pipeline_options(client) -> list[dict[str, Any]]:
    pipelines = (await call(client, "GET", "/crm/v3/pipelines/deals") or {}).get("results") or []
    return [{"label": p.get("label"), "value": p.get("id")} for p in pipelines]


def _created_millis(contact: dict[str, Any]) -> str | None:
    """A contact's ``createdate`` in the cursor's format: epoch milliseconds as a string (13 digits
    until the year 2286, so string order is time order); None when it has none."""
    created = str((contact.get("properties") or {}).get("createdate") or "")
    if created.isdigit():
        return created
    try:
        return str(int(datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp() * 1000))
    except ValueError:
        return None


async def _contacts_after(client, config: dict[str, Any], cursor: str) -> list[dict[str, Any]]:
    body = {
        "filterGroups": [{"filters": [{"propertyName": "createdate", "operator": "GT", "value": str(cursor)}]}],
        "sorts": [{"propertyName": "createdate", "direction": "ASCENDING"}],
        "properties": list(CONTACT_FIELDS) + ["createdate"],
        "limit": 100,
    }
    return (await call(client, "POST", "/crm/v3/objects/contacts/search", json=body) or {}).get("results") or []


#: contacts created after the cursor (a createdate in epoch milliseconds); the first poll only sets it
poll_new_contacts = high_water_mark(_contacts_after, start=lambda client, config: str(now_epoch() * 1000), mark=_created_millis)


def actions() -> list[Action]:
    return [
        Action(
            name="create_contact",
            display_name="Create contact",
            run=create_contact,
            description="Create a CRM contact.",
            docs_url="https://developers.hubspot.com/docs/api/crm/contacts",
            inputs=schema(("email",), email="string", firstname="string", lastname="string", phone="string", company="string", properties="object"),
            scopes=("crm.objects.contacts.write",),
        ),
        Action(
            name="find_contact",
            display_name="Find contact by email",
            run=find_contact,
            description="The contact with this email, or null.",
            docs_url="https://developers.hubspot.com/docs/api/crm/search",
            inputs=schema(("email",), email="string"),
            scopes=("crm.objects.contacts.read",),
        ),
        Action(
            name="create_deal",
            display_name="Create deal",
            run=create_deal,
            description="Create a deal in a pipeline.",
            docs_url="https://developers.hubspot.com/docs/api/crm/deals",
            inputs=schema(("dealname",), dealname="string", amount="string", pipeline="string", dealstage="string", properties="object"),
            scopes=("crm.objects.deals.write",),
            options={"pipeline": pipeline_options},
        ),
    ]


def triggers() -> list[Trigger]:
    return [
        Trigger(
            name="new_contact",
            display_name="New contact",
            kind="poll",
            docs_url="https://developers.hubspot.com/docs/api/crm/search",
            poll=poll_new_contacts,
            description="A contact was created.",
            sample={"id": "101", "properties": {"email": "ada@example.com", "firstname": "Ada"}},
        ),
        Trigger(
            name="contact.creation",
            display_name="Contact created (webhook)",
            kind="webhook",
            docs_url="https://developers.hubspot.com/docs/api/webhooks",
            event_types=("contact.creation",),
            description="HubSpot's contact.creation webhook event.",
        ),
    ]
