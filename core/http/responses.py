"""Response models: the one declaration of what a route answers.

A handler decorated with ``@returns(Model)`` (``status=201`` and so on; several decorators for
several statuses) answers with ``reply(request, value)``. The value (a dict or a model instance) is
validated by pydantic's ``TypeAdapter`` of the model declared for that status, then
serialized by it: a key the model does not declare, a missing one or a value of another type is a
server bug that answers 500 and is logged, never an undocumented shape on the wire. The same
``TypeAdapter`` makes the JSON Schema that ``/openapi.json`` publishes for that status
(``core.http.openapi``), so the document and the answers cannot drift apart.

Models are dataclasses decorated with :func:`response_model` (unknown keys refused); their field
names are the JSON keys.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from aiohttp import web
from pydantic import ConfigDict, TypeAdapter, with_config

T = TypeVar("T")


def response_model(cls: type[T]) -> type[T]:
    """A dataclass whose instances, and dicts of its keys, are answered; a key it does not declare
    is an error (pydantic's lax mode still reads ``"1"`` as an integer: harmless on the way out)."""
    return with_config(ConfigDict(extra="forbid"))(dataclasses.dataclass(cls))


@dataclasses.dataclass(frozen=True)
class Declared:
    """A response a handler declares: its model, the adapter made once, its description."""

    model: Any
    adapter: TypeAdapter
    description: str


def returns(model: Any, *, status: int = 200, description: str = "Success") -> Callable[[T], T]:
    """Decorate a handler: it answers ``status`` with a JSON body of ``model`` (a response model,
    ``list[Model]``, ``Model | None``...), sent by :func:`reply`."""

    def mark(handler: T) -> T:
        declared = dict(getattr(handler, "patchbay_responses", {}))
        declared[status] = Declared(model, TypeAdapter(model), description)
        handler.patchbay_responses = declared  # type: ignore[attr-defined]
        return handler

    return mark


def declared_responses(handler: Any) -> dict[int, Declared]:
    """The responses ``handler`` declares, by status."""
    return getattr(handler, "patchbay_responses", {})


def reply(request: web.Request, value: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """Answer ``value`` as the model the route's handler declares for ``status``."""
    handler = request.match_info.handler
    declared = declared_responses(handler).get(status)
    if declared is None:
        raise LookupError(f"{getattr(handler, '__name__', handler)} declares no response model for status {status}")
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
