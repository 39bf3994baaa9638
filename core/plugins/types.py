"""Objects that plugins register and the core drives (see ``hookspecs``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

import attrs


def _json_object(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value or {})


@attrs.frozen(kw_only=True)
class Action:
    """One operation a provider offers: ``run(client, inputs)`` returns a JSON-serialisable result.

    ``inputs`` is a JSON Schema object describing the inputs; ``options`` maps an input field to a
    coroutine ``(client) -> list[{"label", "value"}]`` giving its dynamic choices. ``output``, when
    given, is the JSON Schema of the result; ``docs_url`` the provider's page documenting the call.
    """

    name: str
    display_name: str
    run: Callable[..., Awaitable[Any]]
    description: str = ""
    inputs: Mapping[str, Any] = attrs.field(factory=dict, converter=_json_object)
    scopes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    options: Mapping[str, Callable[..., Awaitable[list]]] = attrs.field(factory=dict, converter=dict)
    output: Mapping[str, Any] | None = None
    docs_url: str | None = None


@attrs.frozen(kw_only=True)
class Trigger:
    """Something that starts a flow: inbound webhook events (``kind="webhook"``, matching
    ``event_types``) or items found by ``poll(client, config, cursor) -> (items, next_cursor)``
    (``kind="poll"``); ``item_id(item)`` gives the key that makes a polled item start a flow once."""

    name: str
    display_name: str
    kind: Literal["webhook", "poll"]
    description: str = ""
    event_types: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    poll: Callable[..., Awaitable[tuple[list, Any]]] | None = None
    item_id: Callable[[Any], str] | None = None
    config: Mapping[str, Any] = attrs.field(factory=dict, converter=_json_object)
    sample: Mapping[str, Any] = attrs.field(factory=dict, converter=_json_object)
    docs_url: str | None = None


@attrs.frozen(kw_only=True)
class RecordSource:
    """Ingests one resource type of a provider: ``fetch(client, cursor) -> (records, next_cursor)``,
    each record a mapping with an ``id``."""

    resource_type: str
    fetch: Callable[..., Awaitable[tuple[list, Any]]]
