"""Does a real answer match what ``/openapi.json`` says of it? Shared by the tests of several areas
(loaded by path: ``load_openapi_answers()`` in each test module), so that every route's declared
answers are checked the same way: the media type among the declared ones (a JSON body valid against
its schema), no body where none is declared (a redirect's human note aside), and the declared required headers present."""

from __future__ import annotations

import json
from typing import Any

import jsonschema


def documented(document: dict[str, Any], method: str, path: str, status: int) -> dict[str, Any]:
    """The response object ``document`` gives ``status`` of ``method path``: the status's own, else
    its range (``4XX``), else ``default`` (OpenAPI 3.1, Responses Object)."""
    responses = document["paths"][path][method.lower()]["responses"]
    return responses.get(str(status)) or responses.get(f"{str(status)[0]}XX") or responses["default"]


async def assert_documented(document: dict[str, Any], method: str, path: str, response) -> dict[str, Any]:
    """Assert that ``response`` (an aiohttp client response to ``method path``, ``path`` as the
    document writes it) is what the document declares for its status; returns that declaration."""
    declared = documented(document, method, path, response.status)
    assert "See the interface specification" not in declared["description"], f"{method} {path} {response.status} is not declared"
    body = await response.read()
    content = declared.get("content")
    if content is None:
        # a redirect raised as aiohttp's HTTPFound carries its reason ("302: Found") for humans
        assert body == b"" or 300 <= response.status < 400, f"{method} {path} {response.status}: no body is declared"
    else:
        media = response.headers.get("Content-Type", "").split(";")[0].strip()
        assert media in content or "*/*" in content, f"{method} {path} {response.status}: {media} is not one of {sorted(content)}"
        if media == "application/json":
            schema = {**content[media]["schema"], "components": document["components"]}
            jsonschema.validate(json.loads(body), schema, cls=jsonschema.Draft202012Validator)
    for name, header in declared.get("headers", {}).items():
        assert not header.get("required") or name in response.headers, f"{method} {path} {response.status}: no {name} header"
    return declared
