"""The one cursor helper of the built-in poll triggers: a high-water mark.

The first poll returns nothing and sets the cursor to ``start(client, config)`` (now, in the
provider's format, or the position of the newest existing item), so a new trigger does not replay
history; every later poll returns what ``fetch`` finds after the
cursor, and the cursor moves to the highest ``mark`` among them (never backwards)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

Fetch = Callable[[Any, dict[str, Any], Any], Awaitable[list[dict[str, Any]]]]
Poll = Callable[[Any, dict[str, Any], Any], Awaitable[tuple[list, Any]]]


def high_water_mark(fetch: Fetch, *, start: Callable[[Any, dict[str, Any]], Any], mark: Callable[[dict[str, Any]], Any]) -> Poll:
    """A poll function: ``fetch(client, config, cursor)`` lists the items after ``cursor``;
    ``mark(item)`` is an item's position in the cursor's format (None when it has none);
    ``start(client, config)`` may be a coroutine function."""

    async def poll(client, config: dict[str, Any], cursor: Any) -> tuple[list, Any]:
        if cursor is None:
            first = start(client, config)
            return [], await first if inspect.isawaitable(first) else first
        items = await fetch(client, config, cursor)
        marks = [value for value in map(mark, items) if value is not None]
        return sorted(items, key=lambda item: mark(item) or cursor), max([cursor, *marks])

    return poll
