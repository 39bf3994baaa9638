"""Airtable Web API: the poll trigger for new records (the record actions are declared in actions.toml)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from patchbay import Action, Trigger
from patchbay.providers._shared.http import call, now_iso, schema
from patchbay.providers._shared.polling import high_water_mark


def _table(inputs: dict[str, Any]) -> str:
    return f"/v0/{quote(str(inputs['baseId']), safe='')}/{quote(str(inputs['table']), safe='')}"


async def _records_after(client, config: dict[str, Any], cursor: str) -> list[dict[str, Any]]:
    """Records created after the cursor (an ISO timestamp)."""
    formula = f"IS_AFTER(CREATED_TIME(), '{cursor}')"
    return (await call(client, "GET", _table(config), params={"filterByFormula": formula, "pageSize": 100}) or {}).get("records") or []


poll_new_records = high_water_mark(_records_after, start=lambda client, config: now_iso(), mark=lambda record: record.get("createdTime"))


def actions() -> list[Action]:
    """None in code: create_record, update_record and find_records are declared in actions.toml."""
    return []


def triggers() -> list[Trigger]:
    return [
        Trigger(
            name="new_record",
            display_name="New record",
            kind="poll",
            docs_url="https://airtable.com/developers/web/api/list-records",
            poll=poll_new_records,
            config=schema(("baseId", "table"), baseId="string", table="string"),
            description="A record was created.",
        )
    ]
