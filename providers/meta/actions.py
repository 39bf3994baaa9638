"""Meta (Facebook) lead ads: the ``leadgen`` webhook trigger and reading a lead."""

from __future__ import annotations

from typing import Any

from patchbay import Action, Trigger
from patchbay.providers._shared.http import call, schema


async def get_lead(client, inputs: dict[str, Any]) -> Any:
    return await call(client, "GET", f"/v19.0/{inputs['leadId']}", params={"fields": "id,created_time,field_data,form_id,ad_id"})


def actions() -> list[Action]:
    return [
        Action(
            name="get_lead",
            display_name="Get lead",
            run=get_lead,
            description="Read a lead's form answers.",
            inputs=schema(("leadId",), leadId="string"),
            scopes=("leads_retrieval",),
        )
    ]


def triggers() -> list[Trigger]:
    return [
        Trigger(
            name="leadgen",
            display_name="New lead (lead ads)",
            kind="webhook",
            event_types=("leadgen",),
            description="A lead ad form was submitted.",
            sample={"leadgen_id": "123", "page_id": "456", "form_id": "789"},
        )
    ]
