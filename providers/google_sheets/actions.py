"""Google Sheets v4: append and read rows; a poll trigger for new rows."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from patchbay import Action, Trigger
from patchbay.providers._shared.http import call, schema
from patchbay.providers._shared.polling import high_water_mark


def _values_path(spreadsheet_id: str, cell_range: str) -> str:
    return f"/v4/spreadsheets/{quote(spreadsheet_id, safe='')}/values/{quote(cell_range, safe='!:')}"


async def append_row(client, inputs: dict[str, Any]) -> Any:
    path = _values_path(inputs["spreadsheetId"], inputs["range"]) + ":append"
    body = await call(client, "POST", path, params={"valueInputOption": "USER_ENTERED", "insertDataOption": "INSERT_ROWS"}, json={"values": [inputs["values"]]})
    return (body or {}).get("updates", body)


async def get_rows(client, inputs: dict[str, Any]) -> Any:
    body = await call(client, "GET", _values_path(inputs["spreadsheetId"], inputs["range"]))
    return (body or {}).get("values") or []


async def _rows(client, config: dict[str, Any]) -> list[Any]:
    return await get_rows(client, {"spreadsheetId": config["spreadsheetId"], "range": config.get("range") or "Sheet1"})


async def _rows_after(client, config: dict[str, Any], cursor: int) -> list[dict[str, Any]]:
    """Rows below the number of rows seen (the cursor)."""
    return [{"rowNumber": number, "values": values} for number, values in enumerate(await _rows(client, config), start=1) if number > int(cursor)]


async def _row_count(client, config: dict[str, Any]) -> int:
    return len(await _rows(client, config))


poll_new_rows = high_water_mark(_rows_after, start=_row_count, mark=lambda row: row["rowNumber"])


def actions() -> list[Action]:
    scope = ("https://www.googleapis.com/auth/spreadsheets",)
    return [
        Action(
            name="append_row",
            display_name="Append row",
            run=append_row,
            description="Append one row of values.",
            docs_url="https://developers.google.com/sheets/api/reference/rest/v4/spreadsheets.values/append",
            inputs=schema(("spreadsheetId", "range", "values"), spreadsheetId="string", range="string", values="array"),
            scopes=scope,
        ),
        Action(
            name="get_rows",
            display_name="Get rows",
            run=get_rows,
            description="Read the values of a range.",
            docs_url="https://developers.google.com/workspace/sheets/api/reference/rest/v4/spreadsheets.values/get",
            inputs=schema(("spreadsheetId", "range"), spreadsheetId="string", range="string"),
            scopes=scope,
        ),
    ]


def triggers() -> list[Trigger]:
    return [
        Trigger(
            name="new_row",
            display_name="New row",
            kind="poll",
            docs_url="https://developers.google.com/workspace/sheets/api/reference/rest/v4/spreadsheets.values/get",
            poll=poll_new_rows,
            item_id=lambda item: str(item["rowNumber"]),
            config=schema(("spreadsheetId",), spreadsheetId="string", range="string"),
            description="A row was added at the bottom of a sheet.",
            sample={"rowNumber": 2, "values": ["a", "b"]},
        )
    ]
