"""``GET /docs``: the API reference, rendered on the server from the OpenAPI document that
``/openapi.json`` answers (the same ``build_document``), with no script and nothing from a CDN.

The same shaping (:func:`reference`) also writes the Markdown reference, ``docs/reference/api.md``
(:func:`markdown`, run by ``docs/reference/generate.py``), so the page and the file say the same."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import aiohttp_jinja2
import jinja2
import markupsafe
from aiohttp import web

from patchbay.core.appkeys import API_DOCS, API_DOCS_JINJA
from patchbay.core.http.openapi import build_document
from patchbay.core.http.responses import HTML, returns

TEMPLATES = Path(__file__).with_name("templates")
METHOD_ORDER = ("GET", "POST", "PUT", "PATCH", "DELETE")

routes = web.RouteTableDef()


# ---------------------------------------------------------------------------------------------
# Shaping: the OpenAPI document as areas of operations and a list of schemas
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Field:
    name: str
    type: str
    required: bool
    description: str


@dataclasses.dataclass(frozen=True)
class Answer:
    status: str
    description: str
    type: str


@dataclasses.dataclass(frozen=True)
class Operation:
    method: str
    path: str
    anchor: str
    summary: str
    description: str
    credentials: str
    permissions: tuple[str, ...]
    parameters: tuple[Field, ...]
    body: str
    answers: tuple[Answer, ...]


@dataclasses.dataclass(frozen=True)
class Area:
    name: str
    operations: tuple[Operation, ...]


@dataclasses.dataclass(frozen=True)
class Schema:
    name: str
    anchor: str
    description: str
    fields: tuple[Field, ...]
    type: str


@dataclasses.dataclass(frozen=True)
class Reference:
    title: str
    version: str
    server: str
    areas: tuple[Area, ...]
    schemas: tuple[Schema, ...]


def anchor(text: str) -> str:
    """The anchor GitHub and this page give a heading: lower case, punctuation dropped, spaces as
    dashes (``GET /connect/v1/flows/{id}`` -> ``get-connectv1flowsid``)."""
    return re.sub(r"[^a-z0-9 _-]", "", text.lower()).replace(" ", "-")


#: a docstring's note for maintainers, naming where a rule was written down (``(spec 2.6)``,
#: ``(contract section 8)``, ``(issue 14)``): a reader of the reference has none of those
_INTERNAL_NOTE = re.compile(r"\s*\((?:(?:interface )?spec|contract|issue)\b[^()]*\)", re.IGNORECASE)


def _text(value: Any) -> str:
    """One paragraph of plain text with Markdown code spans (the docstrings use ``double`` ones),
    without notes for maintainers."""
    return " ".join(_INTERNAL_NOTE.sub("", str(value or "")).replace("``", "`").split())


def type_of(schema: Any) -> str:
    """A short name for a JSON Schema: a component's name, ``list of X``, ``a | b``, an enum's values."""
    if not isinstance(schema, dict):
        return "any"
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "enum" in schema:
        return " | ".join(repr(value) if isinstance(value, str) else str(value) for value in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(dict.fromkeys(type_of(option) for option in schema[key]))
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return type_of(schema["allOf"][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        return f"list of {type_of(schema.get('items'))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of {type_of(schema['additionalProperties'])}"
    return kind or "any"


def _body_type(content: dict[str, Any]) -> str:
    return "; ".join(f"{media} {type_of(item.get('schema'))}".strip() for media, item in content.items())


def _operation(method: str, path: str, operation: dict[str, Any]) -> Operation:
    parameters = tuple(
        Field(
            name=f"{parameter['name']} ({parameter.get('in', 'query')})",
            type=type_of(parameter.get("schema")),
            required=bool(parameter.get("required")),
            description=_text(parameter.get("description")),
        )
        for parameter in operation.get("parameters", [])
    )
    body = operation.get("requestBody")
    answers = tuple(
        Answer(status=status, description=_text(answer.get("description")), type=_body_type(answer.get("content", {})))
        for status, answer in operation.get("responses", {}).items()
        if answer.get("content") or status != "default"
    )
    credentials = "x-api-key or Bearer access token" if operation.get("security") else "none"
    return Operation(
        method=method.upper(),
        path=path,
        anchor=anchor(f"{method.upper()} {path}"),
        summary=_text(operation.get("summary")),
        description=_text(operation.get("description")),
        credentials=credentials,
        permissions=tuple(operation.get("x-permissions", ())),
        parameters=parameters,
        body=_body_type(body.get("content", {})) if body else "",
        answers=answers,
    )


def _schema(name: str, schema: dict[str, Any]) -> Schema:
    required = set(schema.get("required", ()))
    fields = tuple(
        Field(name=field, type=type_of(value), required=field in required, description=_text(value.get("description") if isinstance(value, dict) else ""))
        for field, value in schema.get("properties", {}).items()
    )
    return Schema(
        name=name,
        anchor=anchor(name),
        description=_text(schema.get("description")),
        fields=fields,
        type=type_of({k: v for k, v in schema.items() if k != "description"}),
    )


def reference(document: dict[str, Any]) -> Reference:
    """The areas (the operations' tags, by name) with their operations (by path, then method) and the
    component schemas (by name) of ``document``."""
    by_area: dict[str, list[Operation]] = {}
    for path, methods in document.get("paths", {}).items():
        for method, operation in sorted(methods.items(), key=lambda item: METHOD_ORDER.index(item[0].upper()) if item[0].upper() in METHOD_ORDER else 99):
            area = (operation.get("tags") or ["other"])[0]
            by_area.setdefault(area, []).append(_operation(method, path, operation))
    schemas = document.get("components", {}).get("schemas", {})
    return Reference(
        title=document.get("info", {}).get("title", ""),
        version=str(document.get("info", {}).get("version", "")),
        server=(document.get("servers") or [{"url": ""}])[0]["url"],
        areas=tuple(Area(name, tuple(operations)) for name, operations in sorted(by_area.items())),
        schemas=tuple(_schema(name, schema) for name, schema in sorted(schemas.items())),
    )


# ---------------------------------------------------------------------------------------------
# Rendering: HTML for /docs, Markdown for docs/reference/api.md
# ---------------------------------------------------------------------------------------------


def _code_spans(text: str) -> markupsafe.Markup:
    """Escape ``text`` and show its `code spans` as <code>."""
    escaped = str(markupsafe.escape(text))
    return markupsafe.Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped))


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _schema_links(text: str, names: frozenset[str], *, html: bool) -> str:
    """``text`` (a type such as ``list of Flow``) with each schema name linked to its section."""

    def link(match: re.Match[str]) -> str:
        name = match.group(0)
        if name not in names:
            return name
        return f'<a href="#schema-{anchor(name)}">{name}</a>' if html else f"[{name}](#{anchor(name)})"

    if html:
        return markupsafe.Markup(_WORD.sub(link, str(markupsafe.escape(text))))
    return _WORD.sub(link, text)


def markdown(document: dict[str, Any]) -> str:
    """The Markdown reference of ``document`` (what ``docs/reference/api.md`` holds)."""
    ref = reference(document)
    names = frozenset(schema.name for schema in ref.schemas)
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    environment.filters["cell"] = _cell
    environment.filters["links"] = lambda text: _schema_links(text, names, html=False)
    return environment.get_template("api_reference.md").render(ref=ref)


@dataclasses.dataclass
class RenderedPage:
    """The page, rendered on the first request (the document is complete only once every route is added)."""

    html: str | None = None


@routes.get("/docs")
@returns(HTML)
async def api_docs(request: web.Request) -> web.Response:
    """The API reference as one HTML page, rendered from this service's OpenAPI document."""
    page = request.app[API_DOCS]
    if page.html is None:
        ref = reference(build_document(request.app))
        names = frozenset(schema.name for schema in ref.schemas)
        page.html = aiohttp_jinja2.render_string("api_docs.html", request, {"ref": ref, "names": names}, app_key=API_DOCS_JINJA)
    return web.Response(text=page.html, content_type="text/html", headers={"Cache-Control": "no-cache", "X-Frame-Options": "DENY"})


def setup(app: web.Application) -> None:
    aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(TEMPLATES), app_key=API_DOCS_JINJA, autoescape=True, trim_blocks=True, lstrip_blocks=True)
    app[API_DOCS_JINJA].filters["code"] = _code_spans
    app[API_DOCS_JINJA].filters["links"] = lambda text, names: _schema_links(text, names, html=True)
    app[API_DOCS] = RenderedPage()
    app.router.add_routes(routes)
