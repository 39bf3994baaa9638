"""What every action module shares: one provider call that raises on a non-2xx answer, and a small
JSON-schema builder for action inputs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


class ProviderError(RuntimeError):
    """The provider refused the call; the message carries its status and answer."""


async def call(client: Any, method: str, path: str, *, params=None, json=None, data=None, headers=None) -> Any:
    """Call the provider through the connection client; the parsed JSON answer (or text)."""
    response = await client.request(method, path, params=params, json=json, data=data, headers=headers)
    try:
        body = response.json()
    except ValueError:
        body = response.text
    if not 200 <= response.status < 300:
        raise ProviderError(f"{method} {path} answered {response.status}: {str(body)[:500]}")
    return body


def schema(required: tuple[str, ...] = (), **properties: str | dict[str, Any]) -> dict[str, Any]:
    """``schema(("email",), email="string", tags={"type": "array"})`` -> a JSON Schema object."""
    props = {name: ({"type": spec} if isinstance(spec, str) else spec) for name, spec in properties.items()}
    return {"type": "object", "properties": props, "required": list(required)}


def compact(values: dict[str, Any]) -> dict[str, Any]:
    """Drop unset (None or empty-string) values: templates render missing fields as ''."""
    return {k: v for k, v in values.items() if v is not None and v != ""}


def now_epoch() -> int:
    return int(datetime.now(UTC).timestamp())


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
