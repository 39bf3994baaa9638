"""Calling plugin code whose result may or may not be awaitable (hooks are synchronous, and a hook's
result may be a coroutine: ``docs/provider-packs.md``)."""

from __future__ import annotations

import inspect
from typing import Any


async def maybe_await(value: Any) -> Any:
    """``value``, awaited first when it is awaitable."""
    return await value if inspect.isawaitable(value) else value
