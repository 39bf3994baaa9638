"""Tables over HTTP: schema validation, rows, upsert, lookup, search, CSV import edge cases, export,
the row cap and tenant isolation. The important ones run on SQLite and PostgreSQL."""

import csv
import io
import time

import pytest

from patchbay.core.testing import create_workspace_with_key

COLUMNS = [
    {"name": "name", "type": "text"},
    {"name": "age", "type": "number"},
    {"name": "active", "type": "boolean"},
    {"name": "joined", "type": "date"},
    {"name": "meta", "type": "json"},
]


@pytest.fixture
async def api(aiohttp_client, make_app, database_url):
    client = await aiohttp_client(make_app(database_url=database_url))
    ws = await create_workspace_with_key(client.server.app, plan="enterprise")
    client.ws = ws
    return client


async def make_table(api, slug="people", columns=COLUMNS, headers=None):
    response = await api.post("/connect/v1/tables", json={"name": slug.title(), "slug": slug, "columns": columns}, headers=headers or api.ws["headers"])
    assert response.status == 201, await response.text()
    return await response.json()


async def import_csv(api, slug, text, *, raw=True):
    if raw:
        response = await api.post(
            f"/connect/v1/tables/{slug}/import",
            data=text.encode("utf-8") if isinstance(text, str) else text,
            headers={**api.ws["headers"], "Content-Type": "text/csv"},
        )
    else:
        response = await api.post(f"/connect/v1/tables/{slug}/import", json={"csv": text}, headers=api.ws["headers"])
    return response.status, await response.json()


async def all_rows(api, slug, **query):
    response = await api.get(f"/connect/v1/tables/{slug}/rows", params={"limit": "100", **query}, headers=api.ws["headers"])
    assert response.status == 200
    return await response.json()


async def test_table_crud_and_schema_errors_name_the_column(api):
    table = await make_table(api)
    assert table["slug"] == "people" and table["columns"] == COLUMNS and table["rowCount"] == 0
    response = await api.post("/connect/v1/tables", json={"name": "Bad", "columns": [{"name": "x", "type": "money"}]}, headers=api.ws["headers"])
    assert response.status == 400 and "columns[0].type must be one of text, number" in (await response.json())["message"]
    response = await api.post("/connect/v1/tables", json={"name": "People", "slug": "people", "columns": []}, headers=api.ws["headers"])
    assert response.status == 409
    response = await api.post("/connect/v1/tables/people/rows", json={"data": {"age": "old"}}, headers=api.ws["headers"])
    body = await response.json()
    assert response.status == 400 and body["statusCode"] == 400 and "'age'" in body["message"]
    response = await api.patch(
        "/connect/v1/tables/people", json={"name": "Folks", "columns": [*COLUMNS, {"name": "city", "type": "text"}]}, headers=api.ws["headers"]
    )
    assert response.status == 200 and (await response.json())["name"] == "Folks"
    response = await api.post("/connect/v1/tables/people/rows", json={"data": {"city": "Oslo"}}, headers=api.ws["headers"])
    assert response.status == 201
    listed = await (await api.get("/connect/v1/tables", headers=api.ws["headers"])).json()
    assert [(t["slug"], t["rowCount"]) for t in listed] == [("people", 1)]
    assert (await api.delete("/connect/v1/tables/people", headers=api.ws["headers"])).status == 200
    assert (await api.get("/connect/v1/tables/people", headers=api.ws["headers"])).status == 404


@pytest.mark.both_databases
async def test_rows_upsert_merge_patch_delete_and_lookup(api):
    await make_table(api)
    headers = api.ws["headers"]
    first = await (
        await api.post("/connect/v1/tables/people/rows/upsert", json={"external_key": "u1", "data": {"name": "Ann", "age": 30}}, headers=headers)
    ).json()
    assert first["created"] is True
    second = await (await api.post("/connect/v1/tables/people/rows/upsert", json={"external_key": "u1", "data": {"active": True}}, headers=headers)).json()
    assert second["created"] is False and second["id"] == first["id"]
    assert second["data"] == {"name": "Ann", "age": 30, "active": True}
    response = await api.post("/connect/v1/tables/people/rows/upsert", json={"data": {"name": "x"}}, headers=headers)
    assert response.status == 400 and "external_key" in (await response.json())["message"]
    other = await (await api.post("/connect/v1/tables/people/rows", json={"data": {"name": "Bob", "age": 30}}, headers=headers)).json()
    patched = await (await api.patch(f"/connect/v1/tables/people/rows/{other['id']}", json={"data": {"joined": "2024-05-01"}}, headers=headers)).json()
    assert patched["data"] == {"name": "Bob", "age": 30, "joined": "2024-05-01"}
    found = await (await api.get("/connect/v1/tables/people/rows/lookup", params={"column": "age", "value": "30"}, headers=headers)).json()
    assert found["id"] == other["id"]  # Bob was updated last
    missing = await api.get("/connect/v1/tables/people/rows/lookup", params={"column": "name", "value": "Zed"}, headers=headers)
    assert missing.status == 200 and await missing.json() is None
    assert (await api.delete(f"/connect/v1/tables/people/rows/{other['id']}", headers=headers)).status == 200
    found = await (await api.get("/connect/v1/tables/people/rows/lookup", params={"column": "age", "value": "30"}, headers=headers)).json()
    assert found["id"] == first["id"]
    assert (await api.delete(f"/connect/v1/tables/people/rows/{other['id']}", headers=headers)).status == 404


@pytest.mark.both_databases
@pytest.mark.slow  # about 1 s (setup and call)
async def test_search_finds_rows_by_word_prefixes_and_pages(api):
    await make_table(api)
    headers = api.ws["headers"]
    for index in range(25):
        await api.post(
            "/connect/v1/tables/people/rows", json={"data": {"name": f"Person {index}", "meta": {"email": f"p{index}@example.com"}}}, headers=headers
        )
    await api.post("/connect/v1/tables/people/rows", json={"data": {"name": "Zoë O'Hara-Smith"}}, headers=headers)
    body = await all_rows(api, "people", search="o'hara smi")
    assert [row["data"]["name"] for row in body["data"]] == ["Zoë O'Hara-Smith"] and body["total"] == 1
    body = await all_rows(api, "people", search="p7@example")
    assert [row["data"]["name"] for row in body["data"]] == ["Person 7"]
    page2 = await (await api.get("/connect/v1/tables/people/rows", params={"page": "2", "limit": "10", "search": "person"}, headers=headers)).json()
    assert page2["total"] == 25 and page2["page"] == 2 and len(page2["data"]) == 10
    assert (await all_rows(api, "people", search="nobody"))["total"] == 0


async def test_csv_edge_cases_quotes_newlines_bom_and_bad_lines(api):
    await make_table(api)
    text = (
        "\ufeffexternal_key,name,age,active,joined,meta\r\n"
        'k1,"Smith, Ann",41,true,2024-01-02,"{""tier"": ""gold""}"\r\n'
        'k2,"Line one\nline two",,no,,\r\n'
        "k3,Too,few\r\n"
        "k4,Bad age,forty,true,,\r\n"
        "\r\n"
        'k5,"Quote ""inside""",5,1,2024-02-03T04:05:06Z,[1]\r\n'
    )
    status, report = await import_csv(api, "people", text)
    assert status == 201, report
    assert (report["created"], report["updated"], report["rejected"]) == (3, 0, 2)
    assert [error["line"] for error in report["errors"]] == [5, 6]  # the quoted newline makes k2 span lines 3-4
    assert "expected 6 fields" in report["errors"][0]["message"] and "'age'" in report["errors"][1]["message"]
    rows = {row["external_key"]: row["data"] for row in (await all_rows(api, "people"))["data"]}
    assert rows["k1"] == {"name": "Smith, Ann", "age": 41, "active": True, "joined": "2024-01-02", "meta": {"tier": "gold"}}
    assert rows["k2"] == {"name": "Line one\nline two", "age": None, "active": False, "joined": None, "meta": None}
    assert rows["k5"]["name"] == 'Quote "inside"' and rows["k5"]["meta"] == [1]
    # re-import through the JSON form updates by external_key instead of duplicating
    status, report = await import_csv(api, "people", "external_key,age\nk1,42\nk9,1\n", raw=False)
    assert (report["created"], report["updated"], report["rejected"]) == (1, 1, 0)
    rows = {row["external_key"]: row["data"] for row in (await all_rows(api, "people"))["data"]}
    assert rows["k1"]["age"] == 42 and rows["k1"]["name"] == "Smith, Ann"


async def test_csv_header_problems_refuse_the_file(api):
    await make_table(api)
    for text, words in (
        ("", "header line is missing"),
        ("\ufeff", "header line is missing"),
        ("Ann,41,true\n", "unknown column 'Ann'"),
        ("name,,age\nx,y,1\n", "empty column name"),
        ("name,name\n", "twice"),
    ):
        status, body = await import_csv(api, "people", text)
        assert status == 400 and words in body["message"], (text, body)
    assert (await all_rows(api, "people"))["total"] == 0
    response = await api.post("/connect/v1/tables/people/import", data=b"name\n\xff\xfe\n", headers={**api.ws["headers"], "Content-Type": "text/csv"})
    assert response.status == 400


async def test_import_by_id_updates_exported_rows_and_export_streams_csv(api):
    await make_table(api)
    await import_csv(api, "people", 'external_key,name,meta\na,Ann,"{""x"": 1}"\nb,Bob,\n')
    response = await api.get("/connect/v1/tables/people/export", headers=api.ws["headers"])
    assert response.status == 200 and response.headers["Content-Type"].startswith("text/csv")
    exported = list(csv.reader(io.StringIO(await response.text())))
    assert exported[0] == ["id", "external_key", "name", "age", "active", "joined", "meta"]
    by_key = {line[1]: line for line in exported[1:]}
    assert by_key["a"][2] == "Ann" and by_key["a"][6] == '{"x": 1}' and by_key["b"][6] == ""
    # edit the exported file and import it back: matched by id, nothing created
    edited = io.StringIO()
    writer = csv.writer(edited)
    writer.writerow(["id", "name"])
    writer.writerow([by_key["a"][0], "Ann Renamed"])
    status, report = await import_csv(api, "people", edited.getvalue())
    assert (report["created"], report["updated"]) == (0, 1)
    rows = {row["external_key"]: row["data"] for row in (await all_rows(api, "people"))["data"]}
    assert rows["a"] == {"name": "Ann Renamed", "meta": {"x": 1}}


@pytest.fixture
async def api_sqlite(aiohttp_client, make_app):
    client = await aiohttp_client(make_app())
    client.ws = await create_workspace_with_key(client.server.app, plan="enterprise")
    return client


@pytest.mark.slow  # 100,000 rows
async def test_import_of_100000_rows_streams_and_counts(api_sqlite):
    """On SQLite only, to keep the suite fast: PostgreSQL's import path (COPY, key probes) is the
    same code as in the other import tests, which run on both databases."""
    api = api_sqlite
    await make_table(api, columns=[{"name": "name", "type": "text"}, {"name": "n", "type": "number"}])
    lines = ["external_key,name,n\n"] + [f"k{i},Name {i},{i}\n" for i in range(100_000)]

    async def body():
        for start in range(0, len(lines), 5_000):  # sent in pieces: the server never sees it whole
            yield "".join(lines[start : start + 5_000]).encode()

    started = time.perf_counter()
    response = await api.post("/connect/v1/tables/people/import", data=body(), headers={**api.ws["headers"], "Content-Type": "text/csv"})
    report = await response.json()
    assert response.status == 201, report
    assert (report["created"], report["rejected"]) == (100_000, 0), time.perf_counter() - started
    table = await (await api.get("/connect/v1/tables/people", headers=api.ws["headers"])).json()
    assert table["rowCount"] == 100_000
    found = await (await api.get("/connect/v1/tables/people/rows", params={"search": "name 99999"}, headers=api.ws["headers"])).json()
    assert [row["external_key"] for row in found["data"]] == ["k99999"]


async def test_row_cap_of_the_plan(aiohttp_client, make_app):
    client = await aiohttp_client(make_app(plans={"free": {"table_rows": 3}}))
    ws = await create_workspace_with_key(client.server.app, plan="free")
    await client.post("/connect/v1/tables", json={"name": "T", "slug": "t", "columns": []}, headers=ws["headers"])
    for index in range(3):
        assert (await client.post("/connect/v1/tables/t/rows", json={"data": {"i": index}}, headers=ws["headers"])).status == 201
    response = await client.post("/connect/v1/tables/t/rows", json={"data": {"i": 9}}, headers=ws["headers"])
    assert response.status == 403 and (await response.json())["message"].startswith("Plan limit exceeded for table_rows:")
    response = await client.post("/connect/v1/tables/t/rows/upsert", json={"external_key": "new", "data": {}}, headers=ws["headers"])
    assert response.status == 403
    response = await client.post("/connect/v1/tables/t/import", data=b"i\n1\n", headers={**ws["headers"], "Content-Type": "text/csv"})
    assert response.status == 403
    rows = await (await client.get("/connect/v1/tables/t/rows", headers=ws["headers"])).json()
    assert rows["total"] == 3


@pytest.mark.both_databases
async def test_tables_are_tenant_isolated(api):
    await make_table(api)
    row = await (await api.post("/connect/v1/tables/people/rows", json={"data": {"name": "Mine"}}, headers=api.ws["headers"])).json()
    other = await create_workspace_with_key(api.server.app, name="Other", plan="enterprise")
    headers = other["headers"]
    assert await (await api.get("/connect/v1/tables", headers=headers)).json() == []
    assert (await api.get("/connect/v1/tables/people/rows", headers=headers)).status == 404
    assert (await api.get("/connect/v1/tables/people/export", headers=headers)).status == 404
    await make_table(api, headers=headers)  # same slug, their own table
    assert (await api.patch(f"/connect/v1/tables/people/rows/{row['id']}", json={"data": {"name": "Theirs"}}, headers=headers)).status == 404
    assert (await api.delete(f"/connect/v1/tables/people/rows/{row['id']}", headers=headers)).status == 404
    assert (await (await api.get("/connect/v1/tables/people/rows", params={"search": "mine"}, headers=headers)).json())["total"] == 0
    mine = await all_rows(api, "people")
    assert [r["data"]["name"] for r in mine["data"]] == ["Mine"]


async def test_permissions_gate_tables(aiohttp_client, make_app):
    client = await aiohttp_client(make_app())
    viewer = await create_workspace_with_key(client.server.app, permissions=["tables.view"])
    assert (await client.get("/connect/v1/tables", headers=viewer["headers"])).status == 200
    assert (await client.post("/connect/v1/tables", json={"name": "x", "columns": []}, headers=viewer["headers"])).status == 403
    assert (await client.get("/connect/v1/tables")).status == 401


async def test_patch_columns_merges_and_only_explicit_removal_drops_values(api):
    """PATCH ``columns`` adds or retypes what it names and keeps the other columns and their data;
    ``removeColumns`` drops a column together with its values (nothing is left unseen in storage)."""
    await make_table(api)
    headers = api.ws["headers"]
    assert (await api.post("/connect/v1/tables/people/rows", json={"data": {"name": "Ann", "age": 30}}, headers=headers)).status == 201
    response = await api.patch("/connect/v1/tables/people", json={"columns": [{"name": "city", "type": "text"}]}, headers=headers)
    assert response.status == 200
    assert [c["name"] for c in (await response.json())["columns"]] == ["name", "age", "active", "joined", "meta", "city"]
    exported = list(csv.reader(io.StringIO(await (await api.get("/connect/v1/tables/people/export", headers=headers)).text())))
    assert exported[0][2:] == ["name", "age", "active", "joined", "meta", "city"] and exported[1][2:4] == ["Ann", "30"]

    assert len((await all_rows(api, "people", search="30"))["data"]) == 1
    response = await api.patch("/connect/v1/tables/people", json={"removeColumns": ["age"]}, headers=headers)
    assert response.status == 200 and "age" not in [c["name"] for c in (await response.json())["columns"]]
    rows = await all_rows(api, "people")
    assert rows["data"][0]["data"] == {"name": "Ann"}
    assert (await all_rows(api, "people", search="30"))["data"] == []
    response = await api.patch("/connect/v1/tables/people", json={"removeColumns": ["nope"]}, headers=headers)
    assert response.status == 400 and "nope" in (await response.json())["message"]


async def test_lookup_by_a_name_no_column_can_have_is_400(api):
    """A table without a schema takes any column name in a lookup: one that no column can have (a
    quote, a control character) ended in a JSON path error (500) on SQLite."""
    await make_table(api)
    created = await api.post("/connect/v1/tables", json={"name": "Free form", "slug": "free"}, headers=api.ws["headers"])
    assert created.status == 201
    for slug, column, message in (
        ("free", 'na"me', "is not a column name"),
        ("people", "x" * 101, "is not a column name"),
        ("free", "a\x00b", "Query parameter 'column' must not contain the NUL character"),
    ):
        response = await api.get(f"/connect/v1/tables/{slug}/rows/lookup", params={"column": column, "value": "1"}, headers=api.ws["headers"])
        assert response.status == 400 and message in (await response.json())["message"], column
