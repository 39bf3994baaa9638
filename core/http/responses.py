"""Response models: the one declaration of what a route answers.

A handler decorated with ``@returns(Model)`` (``status=201`` and so on; several decorators for
several statuses) answers with ``reply(request, value)``. The value (a dict or a model instance) is
validated by pydantic's ``TypeAdapter`` of the model declared for that status, then
serialized by it: a key the model does not declare, a missing one or a value of another type is a
server bug that answers 500 and is logged, never an undocumented shape on the wire. The same
``TypeAdapter`` makes the JSON Schema that ``/openapi.json`` publishes for that status
(``core.http.openapi``), so the document and the answers cannot drift apart.

Models are dataclasses decorated with :func:`response_model` (unknown keys refused); their field
names are the JSON keys. An answer whose keys may be absent (not ``null``: absent) is a
``typing_extensions.TypedDict`` (``typing``'s is refused by pydantic before Python 3.12)
with ``NotRequired`` keys, decorated the same way.

Answers that are not a JSON model are declared with the same decorator and documented the same way,
but sent by the handler itself (``reply`` refuses them):

- ``@returns(HTML)``, ``@returns(SVG)``, ``@returns(Media("text/csv"))``: a body of
  that media type (:class:`Media`, with the JSON Schema the document gives it, a string by default);
  ``ANY_MEDIA`` (``*/*``) for a route that passes through whatever it is given (the proxy).
- ``@returns(REDIRECT, status=302)``: the client goes to the ``Location`` header, no body is
  described (aiohttp's ``HTTPFound`` adds its reason for humans); :class:`Bodiless` names the
  headers, ``EMPTY`` is an answer with neither body nor headers.

``status`` may also be a range (``"4XX"``): the identity provider's errors are ``{error,
error_description}`` rather than the ``Error`` envelope, and are declared so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from aiohttp import web
from pydantic import ConfigDict, TypeAdapter, with_config
from typing_extensions import is_typeddict

T = TypeVar("T")


def response_model(cls: type[T]) -> type[T]:
    """A dataclass whose instances, and dicts of its keys, are answered; a key it does not declare
    is an error (pydantic's lax mode still reads ``"1"`` as an integer: harmless on the way out).
    A ``TypedDict`` stays one: its ``NotRequired`` keys are left out of the answer when absent."""
    forbid = with_config(ConfigDict(extra="forbid"))
    return forbid(cls) if is_typeddict(cls) else forbid(dataclasses.dataclass(cls))


@dataclasses.dataclass(frozen=True)
class Media:
    """A body that is not a JSON model: its media type and the JSON Schema the document gives it."""

    media_type: str
    schema: Mapping[str, Any] = dataclasses.field(default_factory=lambda: {"type": "string"})


@dataclasses.dataclass(frozen=True)
class Bodiless:
    """An answer without a body; ``headers`` maps the headers it carries to their OpenAPI header
    objects (``{"description": ..., "schema": ...}``)."""

    headers: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)


HTML = Media("text/html")
SVG = Media("image/svg+xml")
JAVASCRIPT = Media("text/javascript")
#: whatever the route passes through (the body and its media type are someone else's)
ANY_MEDIA = Media("*/*", {})
REDIRECT = Bodiless({"Location": {"description": "Where the client goes next", "required": True, "schema": {"type": "string", "format": "uri-reference"}}})
EMPTY = Bodiless()


@dataclasses.dataclass(frozen=True)
class Declared:
    """A response a handler declares: its model (or :class:`Media`, :class:`Bodiless`), the adapter
    made once for a JSON model (None otherwise), its description."""

    model: Any
    adapter: TypeAdapter | None
    description: str


def returns(model: Any, *, status: int | str = 200, description: str = "Success") -> Callable[[T], T]:
    """Decorate a handler: it answers ``status`` with a JSON body of ``model`` (a response model,
    ``list[Model]``, ``Model | None``...), sent by :func:`reply`; or with what a :class:`Media` or
    :class:`Bodiless` describes, sent by the handler."""

    def mark(handler: T) -> T:
        declared = dict(getattr(handler, "patchbay_responses", {}))
        adapter = None if isinstance(model, (Media, Bodiless)) else TypeAdapter(model)
        declared[status] = Declared(model, adapter, description)
        handler.patchbay_responses = declared  # type: ignore[attr-defined]
        return handler

    return mark


def declared_responses(handler: Any) -> dict[int | str, Declared]:
    """The responses ``handler`` declares, by status."""
    return getattr(handler, "patchbay_responses", {})


def reply(request: web.Request, value: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """Answer ``value`` as the model the route's handler declares for ``status``."""
    handler = request.match_info.handler
    declared = declared_responses(handler).get(status)
    if declared is None or declared.adapter is None:
        raise LookupError(f"{getattr(handler, '__name__', handler)} declares no JSON response model for status {status}")
    body = declared.adapter.dump_json(declared.adapter.validate_python(value), warnings="error")
    return web.Response(body=body, status=status, content_type="application/json", headers=headers)


def page_of(item: type) -> type:
    """The page envelope of contract section 4 around ``item``: ``{data, page, limit, total}``,
    named ``<Item>Page`` in the document."""
    fields = [("data", list[item]), ("page", int), ("limit", int), ("total", int)]  # type: ignore[valid-type]
    return response_model(dataclasses.make_dataclass(f"{item.__name__}Page", fields))


def cursor_page_of(item: type) -> type:
    """The cursor envelope of contract section 4 around ``item``: ``{data, nextCursor}``."""
    fields = [("data", list[item]), ("nextCursor", str | None)]  # type: ignore[valid-type]
    return response_model(dataclasses.make_dataclass(f"{item.__name__}CursorPage", fields))
