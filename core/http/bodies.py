"""Reading request bodies and query parameters into typed values, with 400s that name the field."""

from __future__ import annotations

import json
from typing import Any, TypeVar

import cattrs
from aiohttp import web

from patchbay.core.http.errors import bad_request

T = TypeVar("T")

converter = cattrs.Converter(forbid_extra_keys=False)

MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 20


async def read_json(request: web.Request) -> Any:
    """The parsed JSON body; 400 ``Malformed JSON body`` when it does not parse."""
    raw = await request.read()
    if not raw.strip():
        raise bad_request("Request body is required")
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise bad_request("Malformed JSON body") from None


async def read_object(request: web.Request) -> dict[str, Any]:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    return body


def structure(data: Any, cls: type[T]) -> T:
    """Structure ``data`` into ``cls`` (an attrs class); 400 naming the first bad field."""
    try:
        return converter.structure(data, cls)
    except cattrs.BaseValidationError as error:
        details = cattrs.transform_error(error, path="body")
        raise bad_request("Validation failed: " + "; ".join(details)) from None
    except (TypeError, ValueError) as error:
        raise bad_request(f"Validation failed: {error}") from None


async def read_body(request: web.Request, cls: type[T]) -> T:
    return structure(await read_object(request), cls)


def query_int(request: web.Request, name: str, default: int, *, minimum: int = 1, maximum: int | None = None) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f"Query parameter '{name}' must be an integer") from None
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and at most {maximum}" if maximum is not None else ""
        raise bad_request(f"Query parameter '{name}' must be at least {minimum}{upper}")
    return value


def page_params(request: web.Request) -> tuple[int, int]:
    """``(page, limit)``: page from 1, limit default 20, at most 100."""
    return query_int(request, "page", 1), query_int(request, "limit", DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)


def page_envelope(data: list[Any], page: int, limit: int, total: int) -> dict[str, Any]:
    return {"data": data, "page": page, "limit": limit, "total": total}
