"""``GET /openapi.json``: an OpenAPI 3.1 document of every route, built from the router.

Each operation's summary and description come from its handler's docstring; the permissions a
handler requires (``security.auth.requires``) are listed in ``x-permissions``. A handler without a
docstring is a documentation bug that the test suite reports.

Request bodies: a handler decorated with :func:`accepts` names the model it reads with
``core.http.bodies.structure``; that dataclass is both what validates the body and what the document
publishes, through the same pydantic ``TypeAdapter`` (``core.http.bodies.adapter_of``), so every
constraint the document states is one the server enforces.
A form body (``media=FORM``, read with ``core.http.bodies.read_form``) is a :func:`form_model`: its
fields are the form's fields, all text, optional where they default to None; absent is how a form
says "no value", so the document gives them no ``null``. Query parameters are named one by one with
:func:`query`, or as the fields of a form model with :func:`query_model`. A body and a query model
may be limited to one method of a handler that serves several (``method="GET"``): the authorization
endpoint reads its parameters from the query on GET and from the form on POST.
Responses: a handler decorated with ``core.http.responses.returns`` answers through that model's
``TypeAdapter`` (``reply``), and the same adapter gives the response's schema here; a page, a text,
a redirect (``Media``, ``Bodiless``) is published with its media type or its headers. A handler
without a success declaration is documented as ``default`` without a schema. Errors (``4XX``) have
the schema ``Error``: ``{statusCode, message}``, unless the handler declares its own ``4XX``.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import re
import types
import typing
from typing import Any, TypeVar

from aiohttp import web
from pydantic import ConfigDict, TypeAdapter, with_config
from pydantic.json_schema import DEFAULT_REF_TEMPLATE, GenerateJsonSchema

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import MAX_PAGE, adapter_of
from patchbay.core.http.responses import Bodiless, Declared, Media, declared_responses, returns

#: the document, built on the first request for it (most processes never answer one)
_OPENAPI = web.AppKey("openapi_document", dict)
_PARAM = re.compile(r"\{([^}:]+)(?::[^}]*)?\}")


#: the methods a route registered for any method (``"*"``, the proxy's passthrough) documents
ANY_METHOD = ("GET", "POST", "PUT", "PATCH", "DELETE")


def route_paths(app: web.Application) -> list[tuple[str, str, Any]]:
    """``(method, path, handler)`` of every route, ``HEAD`` and ``OPTIONS`` aside; a route for any
    method is listed once per method of ``ANY_METHOD`` not registered on the same path."""
    found, wildcard = [], []
    for route in app.router.routes():
        if route.method in ("HEAD", "OPTIONS"):
            continue
        info = route.resource.get_info() if route.resource else {}
        path = _PARAM.sub(r"{\1}", info.get("path") or info.get("formatter") or (info.get("prefix", "") + "/{path}"))
        (wildcard if route.method == "*" else found).append((route.method, path, route.handler))
    taken = {(method, path) for method, path, _ in found}
    found += [(method, path, handler) for _, path, handler in wildcard for method in ANY_METHOD if (method, path) not in taken]
    return found


def _operation_ids(routes: list[tuple[str, str, Any]]) -> dict[tuple[str, str], str]:
    """``method_handler`` for each route (the handler's ``operation_name`` when its area sets one,
    else its ``__name__``), or ``method_path`` where a handler serves several paths (cron jobs,
    health aliases, per-provider CRM routes): operationIds are unique."""
    by_handler = {
        (method, path): f"{method.lower()}_{getattr(handler, 'operation_name', None) or getattr(handler, '__name__', 'handler')}"
        for method, path, handler in routes
    }
    counts: dict[str, int] = {}
    for name in by_handler.values():
        counts[name] = counts.get(name, 0) + 1
    return {key: name if counts[name] == 1 else f"{key[0].lower()}_{re.sub(r'[^0-9A-Za-z]+', '_', key[1]).strip('_')}" for key, name in by_handler.items()}


#: the media type of an HTML form's body
FORM = "application/x-www-form-urlencoded"
T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Body:
    """A declared request body: its model, whether it may be left out, its media type and the
    other media types it takes (by schema)."""

    model: type
    required: bool
    media: str
    also: dict[str, dict[str, Any]]


def _per_method(handler: Any, attribute: str, method: str | None, value: Any) -> None:
    """Keep ``value`` on ``handler`` for ``method`` (None: every method the handler serves)."""
    declared = dict(getattr(handler, attribute, {}))
    declared[method.upper() if method else None] = value
    setattr(handler, attribute, declared)


def _for_method(handler: Any, attribute: str, method: str) -> Any:
    declared = getattr(handler, attribute, {})
    return declared.get(method, declared.get(None))


def accepts(
    model: type, *, required: bool = True, also: dict[str, dict[str, Any]] | None = None, media: str = "application/json", method: str | None = None
) -> Any:
    """Decorate a handler (above ``@requires``): its JSON body is ``model``, a dataclass read with
    ``core.http.bodies.read_body`` or ``structure`` (``required=False``: the body may be left out); ``also`` maps
    the other media types it takes to their schemas (``{"text/csv": {"type": "string"}}``).
    ``media=FORM``: the body is a form whose fields ``model`` (a :func:`form_model`) names.
    ``method``: the body of that method only, for a handler that serves several."""
    if media == FORM:
        _check_form_model(model)

    def mark(handler: Any) -> Any:
        _per_method(handler, "patchbay_body", method, Body(model, required, media, also or {}))
        return handler

    return mark


def query(**parameters: dict[str, Any]) -> Any:
    """Decorate a handler (above ``@requires``) with the JSON Schemas of its query parameters, by
    name (``PAGE_QUERY`` for a page list)."""

    def mark(handler: Any) -> Any:
        handler.patchbay_query = parameters
        return handler

    return mark


def query_model(model: type, *, method: str | None = None) -> Any:
    """Decorate a handler with query parameters that are the fields of ``model`` (a
    :func:`form_model`: required where the field has no default, described by its docstring);
    ``method``: on that method only, for a handler that serves several."""
    _check_form_model(model)

    def mark(handler: Any) -> Any:
        _per_method(handler, "patchbay_query_model", method, model)
        return handler

    return mark


def form_model(cls: type[T]) -> type[T]:
    """A dataclass naming the fields of a form (or of a query): every field is text (``str``, a
    ``Literal`` of strings), ``None`` by default where it may be left out; the docstring under a
    field is its description in the document."""
    model = with_config(ConfigDict(use_attribute_docstrings=True))(dataclasses.dataclass(cls))
    _check_form_model(model)
    return model


def _is_text(kind: Any) -> bool:
    origin = typing.get_origin(kind)
    if origin is typing.Literal:
        return all(isinstance(choice, str) for choice in typing.get_args(kind))
    if origin in (typing.Union, types.UnionType):
        return all(member is type(None) or _is_text(member) for member in typing.get_args(kind))
    return kind is str


def _check_form_model(model: type) -> None:
    """A form is flat text: a field of another type could not be sent as one (a declaration bug)."""
    if not dataclasses.is_dataclass(model):
        raise TypeError(f"{model!r} is not a dataclass")
    hints = typing.get_type_hints(model)
    wrong = [field.name for field in dataclasses.fields(model) if not _is_text(hints[field.name])]
    if wrong:
        raise TypeError(f"{model.__name__}: the fields of a form are text; {', '.join(wrong)} are not")


class _FormJsonSchema(GenerateJsonSchema):
    """The schema of a form model: a field left out is absent, never ``null`` (no form can say
    null), so an optional field is its text type without a ``None`` default."""

    def nullable_schema(self, schema: Any) -> Any:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: Any) -> Any:
        if schema.get("default", ...) is None:
            return self.generate_inner(schema["schema"])
        return super().default_schema(schema)


#: ``page`` and ``limit`` of every page list (contract section 4)
PAGE_QUERY: dict[str, dict[str, Any]] = {
    "page": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 1},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
}


ERROR_SCHEMA = {"type": "object", "required": ["statusCode", "message"], "properties": {"statusCode": {"type": "integer"}, "message": {"type": "string"}}}


def _component(name: str, schema: dict[str, Any], schemas: dict[str, Any]) -> None:
    """Publish ``schema`` as ``components.schemas[name]``; two different schemas of one name are a
    bug (two models of the same class name), refused here rather than one hiding the other."""
    if schemas.setdefault(name, schema) != schema:
        raise ValueError(f"two different models are named {name!r} in the OpenAPI document")


#: the JSON Schemas made so far in this process, by model, mode, generator and reference template:
#: a schema is a function of its type alone, and making them is most of the time an app takes to
#: start, so the apps of one process (a test run's hundreds) make each one once
_MADE: dict[tuple[Any, str, type[GenerateJsonSchema], str], dict[str, Any]] = {}


def _json_schema(
    model: Any, mode: str, generator: type[GenerateJsonSchema], ref_template: str = "#/components/schemas/{model}", adapter: TypeAdapter | None = None
) -> dict[str, Any]:
    """A copy of ``model``'s JSON Schema (``$defs`` included), made with ``adapter`` (or a new one)
    the first time the process asks for it."""
    key = (model, mode, generator, ref_template)
    try:
        schema = _MADE.get(key)
    except TypeError:  # an unhashable annotation: made each time
        key, schema = None, None
    if schema is None:
        schema = (adapter or TypeAdapter(model)).json_schema(ref_template=ref_template, mode=mode, schema_generator=generator)  # type: ignore[arg-type]
        if key is not None:
            _MADE[key] = schema
    return copy.deepcopy(schema)


def _schema(
    adapter: TypeAdapter | None, model: Any, mode: str, schemas: dict[str, Any], generator: type[GenerateJsonSchema] = GenerateJsonSchema
) -> dict[str, Any]:
    """The schema of ``model`` (a ``$ref`` for a class); the schemas it refers to go to ``schemas``."""
    schema = _json_schema(model, mode, generator, adapter=adapter)
    for name, definition in schema.pop("$defs", {}).items():
        _component(name, definition, schemas)
    if not isinstance(model, type):
        return schema
    _component(model.__name__, schema, schemas)
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _request_body(body: Body, schemas: dict[str, Any]) -> dict[str, Any]:
    """The ``requestBody`` of ``body``; its schema and the ones it refers to go to ``schemas``."""
    generator = _FormJsonSchema if body.media == FORM else GenerateJsonSchema
    adapter = None if body.media == FORM else adapter_of(body.model)
    content = {body.media: {"schema": _schema(adapter, body.model, "validation", schemas, generator)}}
    content.update({media_type: {"schema": schema} for media_type, schema in body.also.items()})
    return {"required": body.required, "content": content}


def _query_parameters(model: type) -> list[dict[str, Any]]:
    """The query parameters of a form model's fields, each with its field's description."""
    schema = _json_schema(model, "validation", _FormJsonSchema, ref_template=DEFAULT_REF_TEMPLATE)
    required = set(schema.get("required", ()))
    parameters = []
    for name, field in schema["properties"].items():
        field = {key: value for key, value in field.items() if key != "title"}
        description = field.pop("description", None)
        parameter = {"name": name, "in": "query", "required": name in required, "schema": field}
        parameters.append({**parameter, "description": description} if description else parameter)
    return parameters


def _response(declared: Declared, schemas: dict[str, Any]) -> dict[str, Any]:
    """The response object of one declaration: a JSON model's schema, a media type's, or headers."""
    answer: dict[str, Any] = {"description": declared.description}
    model = declared.model
    if isinstance(model, Bodiless):
        if model.headers:
            answer["headers"] = {name: dict(header) for name, header in model.headers.items()}
    elif isinstance(model, Media):
        answer["content"] = {model.media_type: {"schema": dict(model.schema)}}
    else:
        answer["content"] = {"application/json": {"schema": _schema(declared.adapter, model, "serialization", schemas)}}
    return answer


def _responses(handler: Any, schemas: dict[str, Any]) -> dict[str, Any]:
    """The declared responses of ``handler`` (``default`` without a schema when it declares none),
    and the ``Error`` envelope for ``4XX`` unless it declares its own."""
    answers = {str(status): _response(declared, schemas) for status, declared in sorted(declared_responses(handler).items(), key=lambda item: str(item[0]))}
    if not any(status[0] in "23" for status in answers):
        answers["default"] = {"description": "See the interface specification"}
    answers.setdefault("4XX", {"description": "The request was refused", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
    return answers


#: the first segment of a path (after ``/connect/v1``, ``/api/v1`` or ``/api``) -> the area whose
#: tag its operations carry; a segment not listed is its own area
AREAS = {
    "": "service",
    "health": "service",
    "livez": "service",
    "readyz": "service",
    "metrics": "service",
    "openapi.json": "service",
    "docs": "service",
    "cron": "service",
    ".well-known": "identity",
    "oidc": "identity",
    "organizations": "platform",
    "users": "platform",
    "auth": "connections",
    "byoa": "connections",
    "deployment": "integrations",
    "connect": "connect-ui",
    "connect-sessions": "connect-ui",
    "webhook": "webhooks",
    "flow-templates": "flows",
    "task-history": "flows",
    "execute": "actions",
    "registry": "actions",
    "unified": "unified-crm",
    "crm": "leads",
    "api-keys": "workspaces",
    "accounts": "workspaces",
    "mcp": "agents",
    "agent-sessions": "agents",
    "agent-grants": "agents",
}


def _tag(path: str) -> str:
    """The area of a path (:data:`AREAS`, else its first segment after the API prefix:
    ``/connect/v1/flows/..`` is ``flows``)."""
    parts = [part for part in path.split("/") if part and not part.startswith("{")]
    segment = parts[0] if parts else ""
    for prefix in (["connect", "v1"], ["api", "v1"], ["api"]):
        if parts[: len(prefix)] == prefix and len(parts) > len(prefix):
            segment = parts[len(prefix)]
            break
    return AREAS.get(segment, segment)


def build_document(app: web.Application) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Any] = {"Error": ERROR_SCHEMA}
    routes = route_paths(app)
    operation_ids = _operation_ids(routes)
    for method, path, handler in routes:
        doc = inspect.getdoc(handler) or ""
        summary, _, description = doc.partition("\n\n")
        operation: dict[str, Any] = {
            "summary": " ".join(summary.split()),
            "operationId": operation_ids[(method, path)],
            "tags": [_tag(path)],
            "responses": _responses(handler, schemas),
        }
        body = _for_method(handler, "patchbay_body", method)
        if body is not None:
            operation["requestBody"] = _request_body(body, schemas)
        if description:
            operation["description"] = description
        params = _PARAM.findall(path)
        if params:
            operation["parameters"] = [{"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in params]
        for name, schema in getattr(handler, "patchbay_query", {}).items():
            operation.setdefault("parameters", []).append({"name": name, "in": "query", "required": False, "schema": schema})
        query_fields = _for_method(handler, "patchbay_query_model", method)
        if query_fields is not None:
            operation.setdefault("parameters", []).extend(_query_parameters(query_fields))
        if getattr(handler, "patchbay_authenticated", False):
            operation["security"] = [{"apiKey": []}, {"bearer": []}]
            operation["x-permissions"] = list(getattr(handler, "patchbay_permissions", ()))
        paths.setdefault(path, {})[method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "patchbay", "version": "1"},
        "servers": [{"url": app[SERVICES].settings.public_base_url}],
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
            },
        },
        "paths": dict(sorted(paths.items())),
    }


#: what ``/openapi.json`` answers: this document (its shape is OpenAPI's, not a model of ours)
OPENAPI_DOCUMENT = Media("application/json", {"type": "object", "required": ["openapi", "info", "paths"], "description": "An OpenAPI 3.1 document"})


@returns(OPENAPI_DOCUMENT)
async def openapi_json(request: web.Request) -> web.Response:
    """The OpenAPI 3.1 document of this service."""
    cache = request.app[_OPENAPI]
    if not cache:
        cache.update(build_document(request.app))
    return web.json_response(cache)


def setup(app: web.Application) -> None:
    app[_OPENAPI] = {}
    app.router.add_get("/openapi.json", openapi_json)
