"""Airtable Web API: create and update records; a poll trigger for new records."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from patchbay import Action, Trigger
from patchbay.providers._shared.http import call, now_iso, schema
from patchbay.providers._shared.polling import high_water_mark


def _table(inputs: dict[str, Any]) -> str:
    return f"/v0/{quote(str(inputs['baseId']), safe='')}/{quote(str(inputs['table']), safe='')}"


async def create_record(client, inputs: dict[str, Any]) -> Any:
    return await call(client, "POST", _table(inputs), json={"fields": inputs["fields"], "typecast": True})


async def update_record(client, inputs: dict[str, Any]) -> Any:
    return await call(client, "PATCH", f"{_table(inputs)}/{quote(str(inputs['recordId']), safe='')}", json={"fields": inputs["fields"], "typecast": True})


async def find_records(client, inputs: dict[str, Any]) -> Any:
    body = await call(client, "GET", _table(inputs), params={"filterByFormula": inputs["formula"], "maxRecords": inputs.get("maxRecords") or 10})
    return (body or {}).get("records") or []


async def _records_after(client, config: dict[str, Any], cursor: str) -> list[dict[str, Any]]:
    """Records created after the cursor (an ISO timestamp)."""
    formula = f"IS_AFTER(CREATED_TIME(), '{cursor}')"
    return (await call(client, "GET", _table(config), params={"filterByFormula": formula, "pageSize": 100}) or {}).get("records") or []


poll_new_records = high_water_mark(_records_after, start=lambda client, config: now_iso(), mark=lambda record: record.get("createdTime"))


def actions() -> list[Action]:
    table = {"baseId": "string", "table": "string"}
    return [
        Action(
            name="create_record",
            display_name="Create record",
            run=create_record,
            description="Create a record.",
            inputs=schema(("baseId", "table", "fields"), **table, fields="object"),
            scopes=("data.records:write",),
        ),
        Action(
            name="update_record",
            display_name="Update record",
            run=update_record,
            description="Update a record's fields.",
            inputs=schema(("baseId", "table", "recordId", "fields"), **table, recordId="string", fields="object"),
            scopes=("data.records:write",),
        ),
        Action(
            name="find_records",
            display_name="Find records",
            run=find_records,
            description="Records matching a formula.",
            inputs=schema(("baseId", "table", "formula"), **table, formula="string", maxRecords="integer"),
            scopes=("data.records:read",),
        ),
    ]


def triggers() -> list[Trigger]:
    return [
        Trigger(
            name="new_record",
            display_name="New record",
            kind="poll",
            poll=poll_new_records,
            config=schema(("baseId", "table"), baseId="string", table="string"),
            description="A record was created.",
        )
    ]
