"""Every operation of /openapi.json that takes a JSON body, attacked over HTTP with a body nested
2,000 levels deep (4 KB; it ended in a RecursionError, 500, on about 30 routes): no answer is a
server error, and each that reads the body says it is nested too deeply. Imports of another media
type than the documented ones are 415 in the error envelope."""

from __future__ import annotations

import re

import pytest

DEEP_JSON = b'{"a": ' + b"[" * 2000 + b"]" * 2000 + b"}"


async def test_no_json_body_route_answers_a_deep_body_with_a_server_error(client, workspace):
    document = await (await client.get("/openapi.json")).json()
    table = await client.post("/connect/v1/tables", json={"name": "People", "slug": "people"}, headers=workspace["headers"])
    assert table.status == 201
    attacked = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method == "parameters" or "application/json" not in operation.get("requestBody", {}).get("content", {}):
                continue
            url = re.sub(r"\{[^}]+\}", "people", path)
            response = await client.request(method.upper(), url, data=DEEP_JSON, headers={**workspace["headers"], "Content-Type": "application/json"})
            attacked.append(f"{method.upper()} {path}")
            assert response.status < 500, (method, path, response.status, await response.text())
            if response.status == 400:
                body = await response.json()
                message = body.get("message") or body.get("error_description") or ""
                assert "nested" in message.lower(), (method, path, message)
    assert len(attacked) > 40  # the document's JSON bodies, not a handful


@pytest.mark.parametrize("path", ["/connect/v1/tables/people/import", "/connect/v1/records/import"])
async def test_an_import_of_another_media_type_is_415(client, workspace, path):
    table = await client.post("/connect/v1/tables", json={"name": "People", "slug": "people"}, headers=workspace["headers"])
    assert table.status == 201
    response = await client.post(path, data=b"<rows/>", headers={**workspace["headers"], "Content-Type": "application/xml"})
    assert response.status == 415
    body = await response.json()
    assert body["statusCode"] == 415 and "application/xml" in body["message"]
