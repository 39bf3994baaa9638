"""Reads ``providers/*/actions.toml`` into checked :class:`~.format.Declaration` objects.

Structuring is cattrs' (``forbid_extra_keys``, no coercion: ``"3"`` is no integer); the checks after
it cover what the types cannot: JSON Schemas are valid (Draft 2020-12) and each ``example`` satisfies
its schema, every JMESPath expression compiles, path placeholders are required inputs, names are
unique, and each pagination style has what it needs. Every problem raises :class:`DeclarationError`
naming the file and the key.
"""

from __future__ import annotations

import functools
import re
import string
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

import cattrs
import jmespath
import jsonschema
from jmespath.exceptions import JMESPathError

from patchbay.core.declared.format import Action, Declaration, Handshake, Pagination, Request, Trigger, Verification, Webhooks

FILE_NAME = "actions.toml"
_NAME = re.compile(r"^[a-z][a-z0-9_.]*$")
_PAGINATION_NEEDS = {"cursor": ("next_cursor",), "offset": ("offset_param",), "page": ("page_param",), "link": (), "next_url": ("next_url",)}


class DeclarationError(ValueError):
    """A declared-actions file is wrong; the message starts with the file and names the key."""


def _strict(kind: type):
    def structure(value, _type):
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__} {value!r}")
        return value

    return structure


def _tuple_of(kind: type):
    def structure(value, _type):
        if not isinstance(value, list) or not all(isinstance(item, kind) and not isinstance(item, bool) or kind is bool for item in value):
            raise TypeError(f"expected a list of {kind.__name__}, got {value!r}")
        return tuple(value)

    return structure


def _table(value, _type):
    if not isinstance(value, dict):
        raise TypeError(f"expected a table, got {type(value).__name__} {value!r}")
    return value


@functools.cache
def _converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)
    for kind in (str, int, bool):
        converter.register_structure_hook(kind, _strict(kind))
    converter.register_structure_hook_func(lambda kind: kind == tuple[str, ...], _tuple_of(str))
    converter.register_structure_hook_func(lambda kind: kind == tuple[int, ...], _tuple_of(int))
    converter.register_structure_hook_func(lambda kind: kind == Mapping[str, Any], _table)
    return converter


def parse(text: str, source: str) -> Declaration:
    """The checked declaration in ``text``; ``source`` names the file in errors."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise DeclarationError(f"{source}: not valid TOML: {error}") from None
    try:
        declaration = _converter().structure(raw, Declaration)
    except Exception as error:  # cattrs wraps every problem; name each one
        problems = (
            [re.sub(r"@ $", "@ the top level", problem.replace("@ .", "@ ")) for problem in cattrs.transform_error(error, path="")]
            if isinstance(error, cattrs.BaseValidationError)
            else [repr(error)]
        )
        raise DeclarationError(f"{source}: " + "; ".join(problems)) from None
    problems = list(_problems(declaration))
    if problems:
        raise DeclarationError(f"{source}: " + "; ".join(problems))
    return declaration


def load_file(path: Traversable) -> Declaration:
    return parse(path.read_text(encoding="utf-8"), _display(path))


def _display(path: Traversable) -> str:
    parts = str(path).replace("\\", "/").split("/")
    return "/".join(["providers", *parts[-2:]]) if len(parts) >= 2 else str(path)


def declared_files(root: Traversable | None = None) -> list[Traversable]:
    """Every ``actions.toml`` one level under ``root`` (the installed ``providers`` package)."""
    root = files("patchbay.providers") if root is None else root
    found = [folder / FILE_NAME for folder in root.iterdir() if folder.is_dir() and (folder / FILE_NAME).is_file()]
    return sorted(found, key=str)


@functools.cache
def declarations(root: Traversable | None = None) -> tuple[Declaration, ...]:
    """Every declaration under ``root``, parsed once per process; two files declaring one provider
    are refused."""
    loaded = tuple(load_file(path) for path in declared_files(root))
    owners: dict[str, str] = {}
    for path, declaration in zip(declared_files(root), loaded, strict=True):
        for provider in declaration.providers:
            if provider in owners:
                raise DeclarationError(f"{_display(path)}: provider {provider!r} is also declared in {owners[provider]}")
            owners[provider] = _display(path)
    return loaded


# -- checks beyond types -----------------------------------------------------------------------


def _problems(declaration: Declaration) -> Iterator[str]:
    yield from _unique("actions", [action.name for action in declaration.actions])
    yield from _unique("triggers", [trigger.name for trigger in declaration.triggers])
    if declaration.webhooks is not None:
        yield from (f"webhooks.{problem}" for problem in _webhooks_problems(declaration.webhooks))
    for index, action in enumerate(declaration.actions):
        yield from (f"actions[{index}] ({action.name}).{problem}" for problem in _action_problems(action))
    claimed: dict[str, str | None] = {}
    for index, trigger in enumerate(declaration.triggers):
        where = f"triggers[{index}] ({trigger.name})"
        yield from (f"{where}.{problem}" for problem in _trigger_problems(trigger))
        if trigger.kind == "webhook":
            if declaration.webhooks is None:
                yield f"{where}: a webhook trigger needs the file's [webhooks] table"
            for event in trigger.events:
                if event in claimed and claimed[event] != trigger.item:
                    yield f"{where}.events: {event!r} is claimed by another trigger with another item"
                claimed[event] = trigger.item


def _webhooks_problems(hooks: Webhooks) -> Iterator[str]:
    yield from _url("docs", hooks.docs)
    yield from _jmespath("", event_type=hooks.event_type, event_id=hooks.event_id, events=hooks.events)
    if (hooks.event_type is None) == (hooks.event_type_header is None):
        yield "event_type: each event's type is read from the body (event_type) or from a header (event_type_header), one of the two"
    if hooks.verify.scheme != "none" and not hooks.verify.header:
        yield f"verify.header: scheme {hooks.verify.scheme!r} needs the header that carries it"
    yield from (f"verify.{problem}" for problem in _verification_problems(hooks.verify))
    if hooks.handshake is not None:
        yield from (f"handshake.{problem}" for problem in _handshake_problems(hooks.handshake, hooks))


def _handshake_problems(handshake: Handshake, hooks: Webhooks) -> Iterator[str]:
    """``sign_token`` needs its event, token and signature_key and a signed delivery; the echo
    styles take nothing else."""
    signing = {"event": handshake.event, "token": handshake.token, "signature_key": handshake.signature_key}
    if handshake.style == "sign_token":
        yield from (f"{key}: style 'sign_token' needs it" for key, value in signing.items() if value is None)
        if hooks.verify.scheme != "hmac":
            yield "style: 'sign_token' answers only a verified request; the webhooks need verify.scheme = 'hmac'"
        if hooks.event_type is None:
            yield "event: 'sign_token' recognises its request by the body's event_type"
        yield from _jmespath("", token=handshake.token)
    else:
        yield from (f"{key}: only style 'sign_token' has it" for key, value in signing.items() if value is not None)
    if not handshake.name:
        yield "name: the query parameter, header or answer key the handshake uses"


def _action_problems(action: Action) -> Iterator[str]:
    if not _NAME.match(action.name):
        yield f"name: {action.name!r} is not lowercase letters, digits and underscores"
    yield from _url("docs", action.docs)
    yield from _schema_and_example("input", action.input, action.example)
    yield from _request_problems(action.request, action.input)
    if action.request.graphql is not None and not (isinstance(action.sample, dict) and "data" in action.sample):
        yield "sample: a GraphQL answer is an object with data"
    yield from _jmespath("output", select=action.output.select)
    if action.output.schema is not None:
        yield from _schema("output.schema", action.output.schema)
    if action.pagination is not None:
        yield from _pagination_problems(action.pagination)
        if action.request.method != "GET" and action.pagination.style in ("link", "next_url"):
            yield f"pagination: {action.pagination.style} paging follows GET URLs; the request must be a GET"


def _trigger_problems(trigger: Trigger) -> Iterator[str]:
    if not _NAME.match(trigger.name):
        yield f"name: {trigger.name!r} is not lowercase letters, digits, dots and underscores"
    yield from _url("docs", trigger.docs)
    poll_keys = {"request": trigger.request, "items": trigger.items, "cursor": trigger.cursor}
    if trigger.kind == "poll":
        yield from (f"{key}: a poll trigger needs it" for key, value in poll_keys.items() if value is None)
        if trigger.events or trigger.item or trigger.delivery is not None:
            yield "events: only a webhook trigger has events, item and delivery"
        yield from _schema_and_example("config", trigger.config, trigger.example)
        if trigger.request is not None:
            yield from _request_problems(trigger.request, trigger.config)
        yield from _jmespath("", items=trigger.items, item_id=trigger.item_id, cursor=trigger.cursor)
        if trigger.pagination is not None:
            yield from _pagination_problems(trigger.pagination)
    else:
        set_poll_keys = [key for key, value in {**poll_keys, "cursor_param": trigger.cursor_param, "pagination": trigger.pagination}.items() if value]
        if set_poll_keys:
            yield f"{set_poll_keys[0]}: only a poll trigger has it"
        if not trigger.events:
            yield "events: a webhook trigger names at least one event"
        yield from _jmespath("", item=trigger.item)


def _request_problems(request: Request, inputs: Mapping[str, Any]) -> Iterator[str]:
    properties = inputs.get("properties") or {}
    required = set(inputs.get("required") or ())
    for field in (name for _, name, _, _ in string.Formatter().parse(request.path) if name is not None):
        if field not in required:
            yield f"request.path: placeholder {{{field}}} is not a required input"
    if not request.path.startswith("/"):
        yield f"request.path: {request.path!r} does not start with /"
    for key in ("query", "body", "input_headers"):
        for target, name in getattr(request, key).items():
            if name not in properties:
                yield f"request.{key}.{target}: {name!r} is not an input"
    for target, value in request.fixed_query.items():
        if not isinstance(value, str | int | bool):
            yield f"request.fixed_query.{target}: expected a string, integer or boolean"
    if request.graphql is not None:
        yield from _graphql_problems(request, inputs)
    if request.body_format == "form" and any(not isinstance(value, str | int | bool) for value in request.fixed_body.values()):
        yield "request.fixed_body: a form body holds strings, integers and booleans"


def _graphql_problems(request: Request, inputs: Mapping[str, Any]) -> Iterator[str]:
    """The request is a plain POST; the document parses as one operation declaring every variable
    given; each of its non-null variables without a default is given (a constant, or at least one
    required input)."""
    from graphql import GraphQLSyntaxError, NonNullTypeNode, OperationDefinitionNode, parse

    graphql = request.graphql
    if request.method != "POST" or request.body or request.fixed_body or request.body_format != "json":
        yield "request.graphql: a GraphQL request is a POST whose body it builds (no body, fixed_body or body_format beside it)"
    properties, required = inputs.get("properties") or {}, set(inputs.get("required") or ())
    for target, name in graphql.variables.items():
        if name not in properties:
            yield f"request.graphql.variables.{target}: {name!r} is not an input"
    try:
        document = parse(graphql.document)
    except GraphQLSyntaxError as error:
        yield f"request.graphql.document: not a GraphQL document: {error.message}"
        return
    operations = [node for node in document.definitions if isinstance(node, OperationDefinitionNode)]
    if len(operations) != 1:
        yield f"request.graphql.document: holds {len(operations)} operations; a request sends exactly one"
        return
    declared = {node.variable.name.value: node for node in operations[0].variable_definitions}
    givers: dict[str, set[str]] = {}
    for path, name in graphql.variables.items():
        givers.setdefault(path.split(".")[0], set()).add(name)
    for variable in sorted({*givers, *graphql.fixed_variables}):
        if variable not in declared:
            yield f"request.graphql.variables.{variable}: the document declares no ${variable}"
    for variable, node in declared.items():
        if not isinstance(node.type, NonNullTypeNode) or node.default_value is not None or variable in graphql.fixed_variables:
            continue
        if variable not in givers:
            yield f"request.graphql.document: ${variable} is non-null and no variable gives it"
        elif not givers[variable] & required:
            yield f"request.graphql.variables.{variable}: ${variable} is non-null, so an input giving it must be required"


_SIGNED_PART = re.compile(r"\{([^{}]*)\}")


def _verification_problems(verify: Verification) -> Iterator[str]:
    """A signed string of ``{body}`` once and ``{timestamp}`` when (and only when) a timestamp is
    read; the keyed header's keys; nothing of it outside the ``hmac`` scheme."""
    defaults = Verification(scheme=verify.scheme)
    extended = [key for key in ("signed", "timestamp_header", "signature_key", "timestamp_key", "tolerance") if getattr(verify, key) != getattr(defaults, key)]
    if verify.scheme != "hmac":
        if extended:
            yield f"{extended[0]}: only the hmac scheme signs a string"
        return
    parts = _SIGNED_PART.findall(verify.signed)
    unknown = sorted(set(parts) - {"body", "timestamp", "url"})
    if unknown:
        yield f"signed: unknown placeholder {{{unknown[0]}}} (the signed string knows {{body}}, {{timestamp}} and {{url}})"
    if parts.count("body") != 1:
        yield "signed: names {body} exactly once"
    reads_timestamp = verify.timestamp_header is not None or verify.timestamp_key is not None
    if verify.timestamp_header is not None and verify.timestamp_key is not None:
        yield "timestamp_header: the timestamp comes from timestamp_header or timestamp_key, not both"
    if ("timestamp" in parts) != reads_timestamp:
        yield (
            "signed: {timestamp} needs timestamp_header or timestamp_key, and a timestamp read is signed"
            if "timestamp" in parts
            else "signed: a timestamp read must be signed: add {timestamp}"
        )
    if verify.timestamp_key is not None and verify.signature_key is None:
        yield "timestamp_key: a keyed signature header needs signature_key too"
    if verify.tolerance < 1:
        yield "tolerance: at least 1 second"


def _pagination_problems(pagination: Pagination) -> Iterator[str]:
    for key in _PAGINATION_NEEDS[pagination.style]:
        if getattr(pagination, key) is None:
            yield f"pagination.{key}: style {pagination.style!r} needs it"
    if pagination.style == "cursor" and not (pagination.cursor_param or pagination.cursor_body):
        yield "pagination.cursor_param: style 'cursor' sends the cursor as cursor_param or cursor_body"
    if pagination.max_pages < 1 or pagination.page_size < 1:
        yield "pagination.max_pages: max_pages and page_size are at least 1"
    if pagination.style != "next_url" and pagination.next_url is not None:
        yield "pagination.next_url: only style 'next_url' reads it"
    yield from _jmespath("pagination", next_cursor=pagination.next_cursor, next_url=pagination.next_url)


def _schema_and_example(key: str, schema: Mapping[str, Any], example: Mapping[str, Any]) -> Iterator[str]:
    problems = list(_schema(key, schema))
    yield from problems
    if not problems:
        if schema.get("type") != "object":
            yield f"{key}.type: the schema describes an object"
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(dict(example)))
        if error is not None:
            yield f"example: does not satisfy {key} at {error.json_path}: {error.message}"


def _schema(key: str, schema: Mapping[str, Any]) -> Iterator[str]:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        yield f"{key}: not a valid JSON Schema at {error.json_path}: {error.message}"


def _jmespath(prefix: str, **expressions: str | None) -> Iterator[str]:
    for key, expression in expressions.items():
        if expression is None:
            continue
        try:
            jmespath.compile(expression)
        except JMESPathError as error:
            yield f"{prefix + '.' if prefix else ''}{key}: not a JMESPath expression: {str(error).splitlines()[0]}"


def _url(key: str, url: str) -> Iterator[str]:
    if not url.startswith("https://"):
        yield f"{key}: expected the https:// URL of the provider's documentation, got {url!r}"


def _unique(key: str, names: Iterable[str]) -> Iterator[str]:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            yield f"{key}: {name!r} is declared twice"
        seen.add(name)
