"""What the built-in CRM destinations share: a call that raises on a refused answer, and reading
the cleaned lead's names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


async def call(client: Any, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None, ok: tuple[int, ...] = ()) -> tuple[int, Any]:
    """``(status, parsed body)`` of a 2xx answer (or one of ``ok``); RuntimeError otherwise."""
    response = await client.request(method, path, params=dict(params or {}), json=json)
    if not (200 <= response.status < 300 or response.status in ok):
        raise RuntimeError(f"{method} {path} answered {response.status}: {response.text[:300]}")
    try:
        body = response.json()
    except ValueError:
        body = {}
    return response.status, body if body is not None else {}


def names(lead: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """First and last name of a lead, split from ``fullName`` when only that is known."""
    first, last = lead.get("firstName"), lead.get("lastName")
    if not (first or last) and lead.get("fullName"):
        first, _, last = str(lead["fullName"]).partition(" ")
    return first or None, last or None


def compact(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value not in (None, "", [], {})}
