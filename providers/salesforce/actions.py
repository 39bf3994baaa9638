"""Salesforce REST: leads and contacts; a poll trigger for new leads (the SOQL query action is declared
in actions.toml)."""

from __future__ import annotations

from typing import Any

from patchbay import Action, Trigger
from patchbay.providers._shared.http import call, compact, now_iso, schema
from patchbay.providers._shared.polling import high_water_mark

API = "/services/data/v59.0"
#: creating any sObject record (a Lead, a Contact)
DOCS_CREATE = "https://developer.salesforce.com/docs/platform/api-rest/guide/resources-sobject-basic-info-post.html"


async def _create(client, sobject: str, inputs: dict[str, Any], fields: tuple[str, ...]) -> Any:
    record = compact({**{k: inputs.get(k) for k in fields}, **(inputs.get("fields") or {})})
    return await call(client, "POST", f"{API}/sobjects/{sobject}", json=record)


async def create_lead(client, inputs: dict[str, Any]) -> Any:
    return await _create(client, "Lead", inputs, ("FirstName", "LastName", "Company", "Email", "Phone", "LeadSource"))


async def create_contact(client, inputs: dict[str, Any]) -> Any:
    return await _create(client, "Contact", inputs, ("FirstName", "LastName", "Email", "Phone", "AccountId"))


async def _leads_after(client, config: dict[str, Any], cursor: str) -> list[dict[str, Any]]:
    """Leads created after the cursor (an ISO timestamp)."""
    soql = (
        "SELECT Id, FirstName, LastName, Email, Company, Phone, LeadSource, CreatedDate FROM Lead "
        f"WHERE CreatedDate > {cursor} ORDER BY CreatedDate ASC LIMIT 200"
    )
    return (await call(client, "GET", f"{API}/query", params={"q": soql}) or {}).get("records") or []


poll_new_leads = high_water_mark(_leads_after, start=lambda client, config: now_iso(), mark=lambda record: record.get("CreatedDate"))


def actions() -> list[Action]:
    lead = schema(
        ("LastName", "Company"), FirstName="string", LastName="string", Company="string", Email="string", Phone="string", LeadSource="string", fields="object"
    )
    contact = schema(("LastName",), FirstName="string", LastName="string", Email="string", Phone="string", AccountId="string", fields="object")
    return [
        Action(
            name="create_lead",
            display_name="Create lead",
            run=create_lead,
            inputs=lead,
            description="Create a Lead record.",
            scopes=("api",),
            docs_url=DOCS_CREATE,
        ),
        Action(
            name="create_contact",
            display_name="Create contact",
            run=create_contact,
            inputs=contact,
            description="Create a Contact record.",
            scopes=("api",),
            docs_url=DOCS_CREATE,
        ),
    ]


def triggers() -> list[Trigger]:
    return [
        Trigger(
            name="new_lead",
            display_name="New lead",
            kind="poll",
            docs_url="https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm",
            poll=poll_new_leads,
            item_id=lambda r: r.get("Id"),
            description="A lead was created.",
            sample={"Id": "00Q1", "LastName": "Lovelace", "Company": "Analytical"},
        )
    ]
