"""Reading request bodies and query parameters into typed values, with 400s that name the field."""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from typing import Any, TypeVar

import attrs
import cattrs
import cattrs.gen
from cattrs.cols import list_structure_factory
from aiohttp import web
from aiohttp.hdrs import CONTENT_ENCODING
from multidict import MultiDictProxy

from patchbay.core.appkeys import SETTINGS
from patchbay.core.http.errors import ApiError, bad_request, not_found
from patchbay.core.security.auth import authenticate

T = TypeVar("T")

converter = cattrs.Converter(forbid_extra_keys=False)


class WrongType(TypeError):
    """A JSON value of the wrong type where a model field wants a scalar or an object."""


def _exactly(kind: type | tuple[type, ...], label: str):
    """A structure hook that takes a value only as JSON gave it: cattrs' own would turn ``"yes"``
    into ``True`` and ``5`` into ``"5"``."""
    wants_bool = kind is bool

    def hook(value: Any, _type: Any) -> Any:
        if isinstance(value, bool) is not wants_bool or not isinstance(value, kind):
            raise WrongType(f"must be {label}")
        return value

    return hook


for _kind, _label in ((str, "a string"), (bool, "true or false"), (int, "an integer"), ((int, float), "a number")):
    converter.register_structure_hook(float if _kind == (int, float) else _kind, _exactly(_kind, _label))
converter.register_structure_hook_func(lambda kind: kind == dict[str, Any], _exactly(dict, "an object"))

_SCALARS = {str: "a string", int: "an integer", float: "a number", bool: "true or false", type(None): "null"}


def _scalar_union(kind: Any) -> bool:
    return typing.get_origin(kind) in (typing.Union, types.UnionType) and all(member in _SCALARS for member in typing.get_args(kind))


@converter.register_structure_hook_factory(_scalar_union)
def _one_of_scalars(kind: Any) -> Any:
    """A union of JSON scalars (``str | float | None``): the value as JSON gave it, when it is one
    of them (an integer is a number; ``true`` is neither)."""
    members = typing.get_args(kind)
    label = " or ".join(_SCALARS[member] for member in members if member is not type(None))

    def hook(value: Any, _type: Any) -> Any:
        fits = any(type(value) is member or (member is float and type(value) is int) for member in members)
        if not fits:
            raise WrongType(f"must be {label}")
        return value

    return hook


def _array(kind: Any) -> bool:
    return typing.get_origin(kind) is list


@converter.register_structure_hook_factory(_array)
def _only_arrays(kind: Any) -> Any:
    """A list field takes only a JSON array (cattrs would read ``"abc"`` as ``["a", "b", "c"]``)."""
    inner = list_structure_factory(kind, converter)
    check = _exactly(list, "an array")

    def hook(value: Any, _type: Any) -> Any:
        return inner(check(value, _type), _type)

    return hook


def _scalar_or_array(kind: Any) -> bool:
    members = [member for member in typing.get_args(kind) if member is not type(None)]
    arrays = [member for member in members if _array(member)]
    return typing.get_origin(kind) in (typing.Union, types.UnionType) and 0 < len(arrays) < len(members) and all(
        _array(member) or member in _SCALARS for member in members
    )


@converter.register_structure_hook_factory(_scalar_or_array)
def _one_of_scalar_or_array(kind: Any) -> Any:
    """``str | list[str]`` and the like: an array goes to the list member, anything else to the
    union of the scalar members."""
    members = typing.get_args(kind)
    array = next(member for member in members if _array(member))
    scalars = [member for member in members if not _array(member)]
    scalar_kind = typing.Union[tuple(scalars)] if len(scalars) > 1 else scalars[0]  # noqa: UP007 (built at run time)
    label = " or ".join([_SCALARS[member] for member in scalars if member is not type(None)] + ["an array"])

    def hook(value: Any, _type: Any) -> Any:
        if isinstance(value, list):
            return converter.structure(value, array)
        try:
            return converter.structure(value, scalar_kind)
        except WrongType:
            raise WrongType(f"must be {label}") from None

    return hook


def is_model(kind: Any) -> bool:
    """A request model: an attrs class, or a dataclass (whose JSON Schema ``core.http.openapi``
    publishes through pydantic)."""
    return isinstance(kind, type) and (attrs.has(kind) or dataclasses.is_dataclass(kind))


@converter.register_structure_hook_factory(is_model)
def _object_model(cls: type) -> Any:
    """A model takes only a JSON object (cattrs would read ``"x"`` as an object without fields)."""
    inner = cattrs.gen.make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=False)
    check = _exactly(dict, "an object")

    def hook(value: Any, kind: Any) -> Any:
        return inner(check(value, kind), kind)

    return hook

MAX_PAGE_SIZE = 100

#: the last page a page list serves: its offset stays a 64-bit integer, which SQLite and
#: PostgreSQL need (a larger page answered 500)
MAX_PAGE = 10_000_000

DEFAULT_PAGE_SIZE = 20


def body_too_large(limit: int) -> ApiError:
    """413 for a body over ``limit``; reading past the limit raises aiohttp's own 413, which the
    error middleware puts in the same shape."""
    return ApiError(413, f"Request body is larger than {limit} bytes")


@web.middleware
async def body_limit_middleware(request: web.Request, handler) -> web.StreamResponse:
    """Bound what a request may make the server buffer: ``max_body_bytes`` for a caller with a valid
    credential, ``max_unauthenticated_body_bytes`` for everyone else (a webhook receiver's body is
    refused before its signature is checked). A declared ``Content-Length`` over the limit is
    refused unread; a chunked or compressed body fails with 413 when reading (inflating) passes the
    limit."""
    if not request.body_exists:
        return await handler(request)
    settings = request.app[SETTINGS]
    authenticated = await authenticate(request) is not None
    limit = settings.max_body_bytes if authenticated else settings.max_unauthenticated_body_bytes
    if request.content_length is not None and request.content_length > limit:
        raise body_too_large(limit)
    if request.content_length is not None and CONTENT_ENCODING not in request.headers:
        # the parser stops at the declared length and nothing is inflated: the body cannot pass the
        # limit, so the request needs no copy carrying it (a clone costs tens of microseconds)
        return await handler(request)
    return await handler(request.clone(client_max_size=limit))


@web.middleware
async def no_nul_middleware(request: web.Request, handler) -> web.StreamResponse:
    """NUL is no text any database holds (PostgreSQL refuses it outright), so no path or query
    value may carry it: a path holding it names nothing (404), a query parameter holding it is a 400
    naming it. Checked once here, not by every lookup."""
    if "\x00" in request.path:
        raise not_found("Not Found")
    if "%00" in request.rel_url.raw_query_string:
        for key, value in request.query.items():
            if "\x00" in key or "\x00" in value:
                raise bad_request(f"Query parameter '{key.replace(chr(0), '')}' must not contain the NUL character")
    return await handler(request)


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
    """Structure ``data`` into ``cls`` (an attrs class); 400 naming the first bad field."""
    try:
        return converter.structure(data, cls)
    except cattrs.BaseValidationError as error:
        details = [_named(detail) for detail in cattrs.transform_error(error, path="body", format_exception=_format)]
        raise bad_request("Validation failed: " + "; ".join(details)) from None
    except (TypeError, ValueError) as error:
        raise bad_request(f"Validation failed: {error}") from None


def _format(error: BaseException, kind: type | None) -> str:
    if isinstance(error, WrongType):
        return str(error)
    if typing.get_origin(kind) is typing.Literal:
        return "must be one of " + ", ".join(str(choice) for choice in typing.get_args(kind))
    return cattrs.v.format_exception(error, kind)


def _named(detail: str) -> str:
    """``"must be a string @ body.credentials.apiKey"`` as ``"credentials.apiKey must be a string"``,
    ``"required field missing @ body.email"`` as ``"email is required"``."""
    message, _, path = detail.rpartition(" @ ")
    if message == "required field missing":
        return f"{path.removeprefix('body.')} is required"
    return f"{path.removeprefix('body.')} {message}" if message.startswith("must be ") else detail


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
    """``(page, limit)``: page from 1 to ``MAX_PAGE``, limit default 20, at most 100."""
    return query_int(request, "page", 1, maximum=MAX_PAGE), query_int(request, "limit", DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)


def page_envelope(data: list[Any], page: int, limit: int, total: int) -> dict[str, Any]:
    return {"data": data, "page": page, "limit": limit, "total": total}
