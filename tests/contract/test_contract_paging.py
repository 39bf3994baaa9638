"""Contract section 4: every list that answers the page envelope ``{data, page, limit, total}``
takes ``page`` and ``limit`` (limit at most 100, page at most ``MAX_PAGE``) and refuses bad values
with 400 naming them; the document gives every list one of the two envelopes with its parameters."""

from __future__ import annotations

from patchbay.core.http.bodies import MAX_PAGE
from patchbay.core.http.openapi import route_paths


async def _page_lists(client, headers) -> list[str]:
    """The GET routes without path parameters that answer the page envelope."""
    found = []
    for method, path, _handler in route_paths(client.server.app):
        if method != "GET" or "{" in path or not path.startswith(("/connect/v1/", "/accounts")):
            continue
        response = await client.get(path, headers=headers)
        if response.status != 200 or response.content_type != "application/json":
            continue
        body = await response.json()
        if isinstance(body, dict) and {"data", "page", "limit", "total"} <= set(body):
            found.append(path)
    return found


async def test_every_page_list_takes_page_and_limit(client, workspace):
    headers = workspace["headers"]
    lists = await _page_lists(client, headers)
    assert len(lists) >= 10, lists  # the probe found the page lists
    ignored, unchecked = [], []
    for path in lists:
        body = await (await client.get(f"{path}?page=3&limit=7", headers=headers)).json()
        if (body.get("page"), body.get("limit")) != (3, 7) or len(body["data"]) > 7:
            ignored.append(path)
        response = await client.get(f"{path}?limit=101", headers=headers)
        message = (await response.json()).get("message", "")
        if response.status != 400 or "limit" not in message:
            unchecked.append(path)
        # a page whose offset passes a 64-bit integer is refused, not a database error (500)
        response = await client.get(f"{path}?page=411646058401451392&limit=81", headers=headers)
        if response.status != 400 or "page" not in (await response.json()).get("message", ""):
            unchecked.append(f"{path}?page=411646058401451392")
        last = await client.get(f"{path}?page={MAX_PAGE}&limit=100", headers=headers)
        if last.status != 200 or (await last.json())["data"] != []:
            unchecked.append(f"{path}?page={MAX_PAGE}")
    assert ignored == [] and unchecked == []


async def test_the_document_gives_every_list_its_envelope_and_paging_parameters(client):
    """A list answers one of the two envelopes of contract section 4, and declares the parameters of
    that envelope: ``page`` and ``limit`` (at most 100) for ``{data, page, limit, total}``, ``cursor``
    and ``limit`` for ``{data, nextCursor}``."""
    document = await (await client.get("/openapi.json")).json()
    pages, cursors = [], []
    for path, item in document["paths"].items():
        operation = item.get("get")
        schema = (operation or {}).get("responses", {}).get("200", {}).get("content", {}).get("application/json", {}).get("schema", {})
        name = schema.get("$ref", "").rsplit("/", 1)[-1]
        query = {parameter["name"]: parameter["schema"] for parameter in operation.get("parameters", []) if parameter["in"] == "query"} if operation else {}
        if name.endswith("CursorPage"):
            cursors.append(path)
            assert set(document["components"]["schemas"][name]["properties"]) == {"data", "nextCursor"}, path
            assert {"cursor", "limit"} <= set(query), path
        elif name.endswith("Page"):
            pages.append(path)
            assert set(document["components"]["schemas"][name]["properties"]) == {"data", "page", "limit", "total"}, path
            assert {"page", "limit"} <= set(query) and query["limit"].get("maximum") == 100, path
    assert len(pages) >= 17 and len(cursors) >= 7, (pages, cursors)


async def test_page_lists_under_a_path_parameter_take_page_and_limit(client, workspace):
    headers = workspace["headers"]
    table = await client.post("/connect/v1/tables", json={"name": "People", "slug": "people"}, headers=headers)
    flow = await client.post("/connect/v1/flows", json={"name": "Echo"}, headers=headers)
    assert table.status == 201 and flow.status == 201
    flow_id = (await flow.json())["id"]
    for path in ("/connect/v1/tables/people/rows", f"/connect/v1/flows/{flow_id}/executions", "/leads"):
        body = await (await client.get(f"{path}?page=3&limit=7", headers=headers)).json()
        assert (body["page"], body["limit"], body["data"]) == (3, 7, []), path
        refused = await client.get(f"{path}?limit=101", headers=headers)
        assert refused.status == 400 and "limit" in (await refused.json())["message"], path
