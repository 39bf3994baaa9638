"""The API reference: ``docs/reference/api.md`` is what ``docs/reference/generate.py`` writes from
the current OpenAPI document, and ``GET /docs`` renders every operation of ``/openapi.json`` on the
server, with nothing loaded from elsewhere."""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("docs_reference_generate", ROOT / "docs" / "reference" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # builds a whole application and its document: seconds on a busy machine
def test_api_reference_file_is_current():
    generator = _generator()
    expected = generator.render()
    assert generator.TARGET.read_text() == expected, "docs/reference/api.md is not current: run python docs/reference/generate.py"


async def test_docs_page_renders_every_operation_of_the_document(client):
    async with client.get("/openapi.json") as response:
        document = await response.json()
    async with client.get("/docs") as response:
        assert response.status == 200
        assert response.content_type == "text/html"
        page = await response.text()
    for path, methods in document["paths"].items():
        for method in methods:
            assert f'<span class="method">{method.upper()}</span> {html.escape(path)}</h3>' in page, (method, path)
    for name in document["components"]["schemas"]:
        assert f">{html.escape(name)}</h3>" in page, name
    # every link inside the page lands on a section of it
    ids = set(re.findall(r' id="([^"]+)"', page))
    targets = set(re.findall(r'href="#([^"]+)"', page))
    assert targets and targets <= ids, sorted(targets - ids)[:10]
    assert 'href="#schema-checkedflow"' in page  # a body type links to its schema
    # server-side only: no script, and every link or resource stays on this service
    assert "<script" not in page
    assert not re.search(r'(?:src|href)="(?:https?:)?//', page)


async def test_docs_page_is_documented_as_html(client):
    async with client.get("/openapi.json") as response:
        document = await response.json()
    assert "text/html" in document["paths"]["/docs"]["get"]["responses"]["200"]["content"]


def test_reference_drops_notes_for_maintainers():
    from patchbay.core.http.api_docs import reference

    document = {
        "info": {"title": "t", "version": "1"},
        "paths": {"/x": {"get": {"summary": "A flow (spec 2.4): its steps (contract section 6), see (issue 14).", "responses": {}}}},
        "components": {"schemas": {"S": {"description": "A schedule (interface spec, schedules).", "properties": {}}}},
    }
    ref = reference(document)
    assert ref.areas[0].operations[0].summary == "A flow: its steps, see."
    assert ref.schemas[0].description == "A schedule."
