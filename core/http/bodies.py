"""Reading request bodies (validated by pydantic against the models ``/openapi.json`` publishes) and
query parameters into typed values, with 400s that name the field."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.hdrs import CONTENT_ENCODING
from multidict import MultiDictProxy
from pydantic import TypeAdapter, ValidationError

from patchbay.core.http.errors import ApiError, bad_request, not_found
from patchbay.core.security.auth import authenticate

T = TypeVar("T")


def is_model(kind: Any) -> bool:
    """A request model: a dataclass, whose JSON Schema ``core.http.openapi`` publishes and whose
    pydantic ``TypeAdapter`` validates the body (one model, one library, both directions)."""
    return isinstance(kind, type) and dataclasses.is_dataclass(kind)


@functools.cache
def adapter_of(model: Any) -> TypeAdapter:
    """The ``TypeAdapter`` of a request model, made once per model."""
    return TypeAdapter(model)


MAX_PAGE_SIZE = 100

#: the last page a page list serves: its offset stays a 64-bit integer, which SQLite and
#: PostgreSQL need (a larger page answered 500)
MAX_PAGE = 10_000_000

DEFAULT_PAGE_SIZE = 20


def body_too_large(limit: int) -> ApiError:
    """413 for a body over ``limit``; reading past the limit raises aiohttp's own 413, which the
    error middleware puts in the same shape."""
    return ApiError(413, f"Request body is larger than {limit} bytes")


async def bounded(request: web.Request, settings) -> web.Request:
    """Bound what a request may make the server buffer: ``max_body_bytes`` for a caller with a valid
    credential, ``max_unauthenticated_body_bytes`` for everyone else (a webhook receiver's body is
    refused before its signature is checked). A declared ``Content-Length`` over the limit is
    refused unread; a chunked or compressed body fails with 413 when reading (inflating) passes the
    limit. Answers the request to hand on: itself, or a copy bounded to the limit."""
    if not request.body_exists:
        return request
    authenticated = await authenticate(request) is not None
    limit = settings.max_body_bytes if authenticated else settings.max_unauthenticated_body_bytes
    if request.content_length is not None and request.content_length > limit:
        raise body_too_large(limit)
    if request.content_length is not None and CONTENT_ENCODING not in request.headers:
        # the parser stops at the declared length and nothing is inflated: the body cannot pass the
        # limit, so the request needs no copy carrying it (a clone costs tens of microseconds)
        return request
    return request.clone(client_max_size=limit)


def refuse_nul(request: web.Request) -> None:
    """NUL is no text any database holds (PostgreSQL refuses it outright), so no path or query
    value may carry it: a path holding it names nothing (404), a query parameter holding it is a 400
    naming it. Checked once here, not by every lookup."""
    if "\x00" in request.path:
        raise not_found("Not Found")
    if "%00" in request.rel_url.raw_query_string:
        for key, value in request.query.items():
            if "\x00" in key or "\x00" in value:
                raise bad_request(f"Query parameter '{key.replace(chr(0), '')}' must not contain the NUL character")


#: an escape that may decode to a character no database text can hold: NUL or a UTF-16 surrogate
_SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
#: NUL as ``json.dumps`` writes it (an escaped backslash before ``u0000`` is text, not NUL)
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def parse_json(raw: bytes | str) -> Any:
    """``raw`` decoded as JSON; 400 ``Malformed JSON body``, or 400 naming the nesting when the
    document is nested deeper than the decoder can recurse (a few KB of ``[`` would otherwise
    end in a RecursionError), or 400 for a string holding NUL or half of a surrogate pair, which
    is not text (PostgreSQL refuses both; the rest of the service could not send them either)."""
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise bad_request("Malformed JSON body") from None
    except RecursionError:
        raise bad_request("Malformed JSON body: nested too deeply") from None
    text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
    if _SUSPECT_ESCAPE.search(text):
        try:
            dumped = json.dumps(value, ensure_ascii=False)
            dumped.encode("utf-8")
            if _NUL_ESCAPE.search(dumped):
                raise bad_request("Malformed JSON body: a string holds the NUL character (\\u0000)")
        except UnicodeEncodeError:
            raise bad_request("Malformed JSON body: a string holds half of a UTF-16 surrogate pair") from None
    return value


async def read_json(request: web.Request) -> Any:
    """The parsed JSON body; 400 ``Malformed JSON body`` when it does not parse."""
    raw = await request.read()
    if not raw.strip():
        raise bad_request("Request body is required")
    return parse_json(raw)


async def read_form(request: web.Request) -> MultiDictProxy:
    """The form body (urlencoded or multipart); 400 ``Malformed form body`` when it cannot be parsed
    (a multipart type without a boundary, an unknown charset, a truncated part)."""
    try:
        return await request.post()
    except (ValueError, LookupError, UnicodeDecodeError) as error:
        raise bad_request(f"Malformed form body: {error}") from None


async def read_object(request: web.Request) -> dict[str, Any]:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    return body


def structure(data: Any, cls: type[T]) -> T:
    """``data`` (parsed JSON) validated as ``cls`` by pydantic in strict mode, so a value is taken
    only as JSON gave it (``"yes"`` is no boolean, ``"1"`` no integer, ``"abc"`` no array) and every
    constraint the document publishes holds; 400 ``Validation failed: ...`` naming each bad field
    by its dotted path (``credentials.apiKey must be a string``, ``steps[0].id is required``)."""
    try:
        return adapter_of(cls).validate_json(json.dumps(data), strict=True)
    except ValidationError as error:
        raise bad_request("Validation failed: " + "; ".join(validation_messages(error.errors(include_url=False), data))) from None


#: the JSON type a pydantic type error wanted
_WANTED = {
    "string_type": "a string",
    "bool_type": "true or false",
    "int_type": "an integer",
    "float_type": "a number",
    "list_type": "an array",
    "dict_type": "an object",
    "dataclass_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "none_required": "null",
}


def _choices(expected: str) -> str:
    """``"'a', 'b' or 'c'"`` (pydantic's ``expected``) as ``"a, b, c"``."""
    return ", ".join(choice.strip().strip("'") for choice in re.split(r", | or ", expected))


def _problem(error: Mapping[str, Any]) -> str:
    """What is wrong with the value, as the message says it after the field's name."""
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "missing":
        return "is required"
    if kind in _WANTED:
        return f"must be {_WANTED[kind]}"
    if kind in ("literal_error", "enum"):
        return f"must be one of {_choices(str(ctx.get('expected', '')))}"
    if kind == "string_too_short":
        return "must not be empty" if ctx["min_length"] == 1 else f"must have at least {ctx['min_length']} characters"
    if kind == "string_too_long":
        return f"must have at most {ctx['max_length']} characters"
    if kind == "string_pattern_mismatch":
        return f"must match the pattern {ctx['pattern']}"
    if kind == "too_short":
        return f"must have at least {ctx['min_length']} item{'s' if ctx['min_length'] != 1 else ''}"
    if kind == "too_long":
        return f"must have at most {ctx['max_length']} items"
    bounds = {
        "greater_than_equal": ("at least", "ge"),
        "greater_than": ("greater than", "gt"),
        "less_than_equal": ("at most", "le"),
        "less_than": ("less than", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"must be {words} {ctx[key]}"
    message = str(error.get("msg", "is not valid"))
    return message[:1].lower() + message[1:]


def _located(loc: tuple[Any, ...], data: Any, missing: bool) -> tuple[str, int | None]:
    """The dotted path of ``loc`` in ``data`` (``steps[0].id``) and where in ``loc`` the tag of a
    union's member stands (pydantic names the member it tried: ``('status', 'str')``), if anywhere:
    an item that is neither a key of the object nor an index of the array it is read from."""
    path, tag, current = "", None, data
    for position, item in enumerate(loc):
        if isinstance(item, int) and isinstance(current, list):
            path, current = f"{path}[{item}]", current[item] if -len(current) <= item < len(current) else None
        elif isinstance(item, str) and isinstance(current, dict) and (item in current or (missing and position == len(loc) - 1)):
            path, current = f"{path}.{item}" if path else item, current.get(item)
        elif tag is None:
            tag = position
    return path, tag


def _message(path: str, error: Mapping[str, Any]) -> str:
    return f"{path} {_problem(error)}" if path else f"the body {_problem(error)}"


def validation_messages(errors: list[Mapping[str, Any]], data: Any) -> list[str]:
    """One message per bad field: ``"<path> <problem>"``. Of a union's members, the one whose type
    the value had speaks (``status[0] must be a string``); when it had none of them, the message
    lists the types it may be (``status must be a string or an array``)."""
    messages: list[str] = []
    unions: dict[str, list[tuple[Mapping[str, Any], str, tuple[Any, ...], bool]]] = {}
    for error in errors:
        loc = tuple(error["loc"])
        path, tag = _located(loc, data, error["type"] == "missing")
        if tag is None:
            messages.append(_message(path, error))
            continue
        deep = len(loc) > tag + 1 or error["type"] not in _WANTED
        unions.setdefault(_located(loc[:tag], data, False)[0], []).append((error, path, loc[: tag + 1], deep))
    for at, members in unions.items():
        chosen = next((branch for _, _, branch, deep in members if deep), None)
        if chosen is not None:
            messages += [_message(path, error) for error, path, branch, _ in members if branch == chosen]
        else:
            wanted = dict.fromkeys(_WANTED[error["type"]] for error, *_ in members)
            messages.append(f"{at or 'the body'} must be {' or '.join(wanted)}")
    return list(dict.fromkeys(messages))


async def read_body(request: web.Request, cls: type[T]) -> T:
    """The JSON object of the body validated as ``cls`` (:func:`structure`)."""
    return structure(await read_object(request), cls)


def named_values(instance: Any, body: Mapping[str, Any]) -> dict[str, Any]:
    """The validated values of the keys ``body`` names (those ``instance``'s model declares), as
    plain JSON values: a nested model is the dict of the keys it was given, the keys its model does
    not declare kept where the model allows them (a flow step's own keys)."""
    names = {field.name for field in dataclasses.fields(instance)}
    return {key: _plain(getattr(instance, key), value) for key, value in body.items() if key in names}


def _plain(value: Any, raw: Any) -> Any:
    model = type(value)
    if is_model(model) and isinstance(raw, dict):
        names = {field.name for field in dataclasses.fields(model)}
        extra = (getattr(model, "__pydantic_config__", None) or {}).get("extra") == "allow"
        return {key: _plain(getattr(value, key), item) if key in names else item for key, item in raw.items() if extra or key in names}
    if isinstance(value, list) and isinstance(raw, list):
        return [_plain(item, item_raw) for item, item_raw in zip(value, raw, strict=True)]
    if isinstance(value, dict) and isinstance(raw, dict):
        return {key: _plain(value[key], raw[key]) for key in value}
    return value


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
    """``(page, limit)``: page from 1 to ``MAX_PAGE``, limit default 20, at most 100."""
    return query_int(request, "page", 1, maximum=MAX_PAGE), query_int(request, "limit", DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)


def page_envelope(data: list[Any], page: int, limit: int, total: int) -> dict[str, Any]:
    return {"data": data, "page": page, "limit": limit, "total": total}
