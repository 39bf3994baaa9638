"""Runs declared requests through a connection client (``await client.request(method, path,
params=, json=, data=, headers=)``, see ``core/connections/client.py``).

:func:`build` turns a :class:`~.format.Request` and the inputs into the exact call; :func:`send`
makes it and reads the answer, raising the domain error its status means (``Errors``);
:func:`collect` pages through a list; :func:`action_runner` and :func:`poller` are what the
registered ``Action.run`` and ``Trigger.poll`` are.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote

import attrs
import jmespath

from patchbay.core.actions.inputs import check_inputs
from patchbay.core.connections.runtime import retry_seconds
from patchbay.core.declared.format import Action, Declaration, Errors, Pagination, Request, Trigger
from patchbay.core.errors import Conflict, Invalid, NotFound, RateLimited, UpstreamFailed

#: seconds to wait after a rate-limited answer that names no Retry-After
DEFAULT_RETRY_AFTER = 60.0
_FIELD = re.compile(r"\{([^{}]+)\}")
_LINK = re.compile(r"<([^>]*)>\s*((?:;\s*[^;,]+)*)")


class _Refusal:
    """What every provider refusal carries: the answer's ``status`` and parsed ``body``."""

    status: int | None = None
    body: Any = None


class ProviderNotFound(NotFound, _Refusal):
    pass


class ProviderConflict(Conflict, _Refusal):
    pass


class ProviderRateLimited(RateLimited, _Refusal):
    """Rate limited: retry after ``retry_after`` seconds (the answer's ``Retry-After``)."""


class ProviderFailed(UpstreamFailed, _Refusal):
    pass


@attrs.frozen
class Outgoing:
    """One call as ``client.request`` takes it."""

    method: str
    path: str
    params: dict[str, Any] = attrs.field(factory=dict)
    json: Any = None
    data: dict[str, Any] | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    graphql: bool = False  # the answer is a GraphQL response: its ``data``, or its ``errors`` raised


@functools.cache
def _compiled(expression: str) -> Any:
    return jmespath.compile(expression)


def select(expression: str | None, value: Any) -> Any:
    """``expression`` (JMESPath) applied to ``value``; ``value`` itself when there is none."""
    return value if expression is None else _compiled(expression).search(value)


def fill_path(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with each ``{name}`` replaced by the value, percent-encoded as one path segment
    (``a/b`` -> ``a%2Fb``); ``.``, ``..`` and missing values are refused."""

    def segment(match: re.Match) -> str:
        name = match.group(1)
        value = values.get(name)
        if value is None or value == "":
            raise Invalid(f"inputs.{name} is required")
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if text in (".", ".."):
            raise Invalid(f"inputs.{name} may not be {text!r}")
        return quote(text, safe="")

    return _FIELD.sub(segment, template)


def _place(body: dict[str, Any], path: str, value: Any) -> None:
    keys = path.split(".")
    for key in keys[:-1]:
        body = body.setdefault(key, {})
    body[keys[-1]] = value


def build(request: Request, values: Mapping[str, Any], *, headers: Mapping[str, str] = ()) -> Outgoing:
    """The call ``request`` makes with ``values`` (inputs, or a trigger's config); ``headers`` are
    the file's own, under the request's constant ones, under those taken from inputs."""
    params: dict[str, Any] = dict(request.fixed_query)
    params.update({param: values[name] for param, name in request.query.items() if values.get(name) is not None})
    headers = {
        **dict(headers),
        **request.headers,
        **{header: str(values[name]) for header, name in request.input_headers.items() if values.get(name) is not None},
    }
    if request.graphql is not None:
        variables: dict[str, Any] = json.loads(json.dumps(request.graphql.fixed_variables))
        for path, name in request.graphql.variables.items():
            if values.get(name) is not None:
                _place(variables, path, values[name])
        document = {"query": request.graphql.document, "variables": variables}
        return Outgoing(method="POST", path=fill_path(request.path, values), params=params, json=document, headers=headers, graphql=True)
    body: dict[str, Any] = json.loads(json.dumps(request.fixed_body))  # a deep copy the inputs go into
    placed = {path: values[name] for path, name in request.body.items() if values.get(name) is not None}
    if request.body_format == "form":
        body.update(placed)
    else:
        for path, value in placed.items():
            _place(body, path, value)
    has_body = bool(request.body or request.fixed_body)
    return Outgoing(
        method=request.method,
        path=fill_path(request.path, values),
        params=params,
        json=body if has_body and request.body_format == "json" else None,
        data=body if has_body and request.body_format == "form" else None,
        headers=headers,
    )


def retry_after(value: str | None, *, now: datetime | None = None) -> float:
    """Seconds a ``Retry-After`` header asks to wait (:func:`~patchbay.core.connections.runtime.retry_seconds`
    reads it), or :data:`DEFAULT_RETRY_AFTER` when it names none."""
    seconds = retry_seconds(value, now=now.timestamp() if now else None)
    return DEFAULT_RETRY_AFTER if seconds is None else seconds


def _refusal(kind: type, message: str, status: int, body: Any, **extra: Any) -> Exception:
    error = kind(message, **extra)
    error.status, error.body = status, body
    return error


async def send(client: Any, outgoing: Outgoing, errors: Errors) -> tuple[Any, Any]:
    """Make the call; the parsed answer (JSON, else text) and the response. A non-2xx answer
    raises :class:`ProviderNotFound`, :class:`ProviderConflict`, :class:`ProviderRateLimited`
    (``retry_after`` from the answer) or :class:`ProviderFailed`, each with ``status`` and ``body``."""
    response = await client.request(
        outgoing.method, outgoing.path, params=outgoing.params or None, json=outgoing.json, data=outgoing.data, headers=outgoing.headers or None
    )
    try:
        body = response.json()
    except ValueError:
        body = response.text
    status = response.status
    if 200 <= status < 300:
        return (_graphql_data(outgoing, body) if outgoing.graphql else body), response
    message = f"{outgoing.method} {outgoing.path} answered {status}: {str(body)[:500]}"
    if status in errors.not_found:
        raise _refusal(ProviderNotFound, message, status, body)
    if status in errors.conflict:
        raise _refusal(ProviderConflict, message, status, body)
    if status in errors.rate_limited:
        raise _refusal(ProviderRateLimited, message, status, body, retry_after=retry_after(response.headers.get("Retry-After")))
    raise _refusal(ProviderFailed, message, status, body)


def _graphql_data(outgoing: Outgoing, body: Any) -> Any:
    """The ``data`` of a GraphQL answer; :class:`ProviderFailed` with the messages of its
    ``errors`` (GraphQL reports them in a 200), or when the answer is no GraphQL response."""
    if not isinstance(body, dict):
        raise _refusal(ProviderFailed, f"POST {outgoing.path}: the answer is not a GraphQL response: {str(body)[:500]}", 200, body)
    errors = body.get("errors")
    if errors:
        messages = [str(error.get("message", error)) if isinstance(error, dict) else str(error) for error in (errors if isinstance(errors, list) else [errors])]
        raise _refusal(ProviderFailed, f"POST {outgoing.path} answered GraphQL errors: {'; '.join(messages)[:500]}", 200, body)
    return body.get("data")


def next_link(header: str | None) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header (RFC 8288), or None."""
    for url, parameters in _LINK.findall(header or ""):
        for parameter in parameters.split(";"):
            key, _, value = parameter.strip().partition("=")
            if key.strip().lower() == "rel" and "next" in value.strip().strip('"').lower().split():
                return url
    return None


def _page_items(expression: str | None, body: Any, outgoing: Outgoing) -> list[Any]:
    items = select(expression, body)
    if items is None:
        return []
    if not isinstance(items, list):
        raise ProviderFailed(f"{outgoing.method} {outgoing.path}: the answer's {expression or 'body'} is not a list")
    return items


async def collect(
    client: Any,
    request: Request,
    values: Mapping[str, Any],
    *,
    items: str | None,
    pagination: Pagination | None,
    errors: Errors,
    headers: Mapping[str, str] = (),
) -> list[Any]:
    """The items (``items`` of each answer) of every page, in order, following ``pagination``."""
    first = build(request, values, headers=headers)
    if pagination is None:
        body, _ = await send(client, first, errors)
        return _page_items(items, body, first)
    found: list[Any] = []
    outgoing, cursor, offset, page = first, None, 0, pagination.first_page
    for _ in range(pagination.max_pages):
        params = dict(first.params)
        body_json = first.json
        if pagination.size_param:
            params[pagination.size_param] = pagination.page_size
        if pagination.style == "cursor" and cursor is not None:
            if pagination.cursor_param:
                params[pagination.cursor_param] = cursor
            else:
                body_json = json.loads(json.dumps(first.json or {}))
                _place(body_json, pagination.cursor_body, cursor)
        elif pagination.style == "offset":
            params[pagination.offset_param] = offset
        elif pagination.style == "page":
            params[pagination.page_param] = page
        if pagination.style not in ("link", "next_url") or outgoing is first:
            outgoing = attrs.evolve(first, params=params, json=body_json)
        body, response = await send(client, outgoing, errors)
        page_items = _page_items(items, body, outgoing)
        found += page_items
        if not page_items:
            break
        if pagination.style == "cursor":
            cursor = select(pagination.next_cursor, body)
            if cursor in (None, "", False):
                break
        elif pagination.style in ("offset", "page"):
            if len(page_items) < pagination.page_size:
                break
            offset, page = offset + len(page_items), page + 1
        else:
            link = next_link(response.headers.get("Link")) if pagination.style == "link" else select(pagination.next_url, body)
            if not link or not isinstance(link, str):
                break
            # the URL carries its own query: the first page's parameters are not sent again
            outgoing = Outgoing(method="GET", path=link, headers=first.headers)
    return found


def action_runner(declaration: Declaration, action: Action):
    """The ``run(client, inputs)`` of a declared action. ``run_action`` (``core.actions.service``)
    has checked the inputs against ``action.input`` before it is called."""
    errors = action.errors or declaration.errors

    async def run(client: Any, inputs: Any) -> Any:
        values = dict(inputs)
        if action.pagination is not None:
            return await collect(
                client, action.request, values, items=action.output.select, pagination=action.pagination, errors=errors, headers=declaration.headers
            )
        outgoing = build(action.request, values, headers=declaration.headers)
        body, _ = await send(client, outgoing, errors)
        return select(action.output.select, body)

    run.__qualname__ = f"{declaration.provider}.{action.name}"
    return run


def _comparable(mark: Any) -> tuple[int, Any]:
    return (0, mark) if isinstance(mark, int | float) and not isinstance(mark, bool) else (1, str(mark))


def poller(declaration: Declaration, trigger: Trigger):
    """The ``poll(client, config, cursor)`` of a declared poll trigger: a high-water mark over the
    ``cursor`` field of the items. The first poll answers no items and sets the cursor to
    ``{"after": <highest mark seen, or null>}``; later polls answer the items above it, oldest
    first, and move it up."""
    errors = trigger.errors or declaration.errors

    def mark(item: Any) -> Any:
        return select(trigger.cursor, item)

    async def poll(client: Any, config: Any, cursor: Any) -> tuple[list, Any]:
        values = dict(check_inputs(trigger.config, config or {}, "config"))
        after = cursor.get("after") if isinstance(cursor, dict) else None
        request = trigger.request
        if trigger.cursor_param and after is not None:
            values["\0cursor"] = after
            request = attrs.evolve(request, query={**request.query, trigger.cursor_param: "\0cursor"})
        items = await collect(client, request, values, items=trigger.items, pagination=trigger.pagination, errors=errors, headers=declaration.headers)
        marked = [(mark(item), item) for item in items if mark(item) is not None]
        newest = max((m for m, _ in marked), key=_comparable, default=after)
        if after is not None and newest is not None:
            newest = max(newest, after, key=_comparable)
        if cursor is None:
            return [], {"after": newest}
        fresh = [(m, item) for m, item in marked if after is None or _comparable(m) > _comparable(after)]
        return [item for _, item in sorted(fresh, key=lambda pair: _comparable(pair[0]))], {"after": newest}

    return poll


def item_key(trigger: Trigger):
    """The ``item_id(item)`` of a declared poll trigger."""

    def item_id(item: Any) -> str:
        return str(select(trigger.item_id, item))

    return item_id
