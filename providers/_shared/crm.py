"""What the unified CRM mappers of the built-in packs share: reading answers, small field helpers,
and the record source built on a mapper (only the public facade and the client they are handed)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from patchbay import RecordSource

RESOURCES = ("contacts", "companies", "deals")
SYNC_PAGE_SIZE = 100


class CrmError(RuntimeError):
    """The CRM answered something other than what the mapper can read."""


def ok_json(response: Any, provider: str) -> Any:
    """The JSON body of a 2xx answer; :class:`CrmError` naming the status otherwise."""
    if not 200 <= response.status < 300:
        raise CrmError(f"{provider} answered {response.status}: {response.text[:200]}")
    if response.status == 204 or not response.text.strip():
        return None
    try:
        return response.json()
    except ValueError:
        raise CrmError(f"{provider} answered a body that is not JSON") from None


def split_name(name: str | None) -> tuple[str | None, str | None]:
    if not name or not name.strip():
        return None, None
    first, _, last = name.strip().partition(" ")
    return first, last.strip() or None


def primary(values: Any, key: str = "value") -> str | None:
    """The primary (else first) value of a list like Pipedrive's ``[{"value", "primary"}]``."""
    if isinstance(values, str):
        return values or None
    if not isinstance(values, list) or not values:
        return None
    chosen = next((v for v in values if isinstance(v, dict) and v.get("primary")), values[0])
    return chosen.get(key) or None if isinstance(chosen, dict) else None


def utc_iso(text: str | None, fmt: str = "%Y-%m-%d %H:%M:%S") -> str | None:
    """A naive UTC timestamp in ``fmt`` as ISO 8601 with ``Z``; other text is kept as given."""
    if not text:
        return None
    try:
        moment = datetime.strptime(text, fmt).replace(tzinfo=UTC)
    except ValueError:
        return text
    return moment.isoformat().replace("+00:00", "Z")


def domain_of(url: str | None) -> str | None:
    if not url:
        return None
    host = url.split("://", 1)[-1].split("/", 1)[0].lower()
    return host.removeprefix("www.") or None


def ref_id(value: Any) -> str | None:
    """An id given either plainly or as ``{"id"|"value": ...}``."""
    if isinstance(value, dict):
        value = value.get("id", value.get("value"))
    return str(value) if value not in (None, "") else None


def record_source(mapper: Any, resource: str) -> RecordSource:
    """A record source reading one unified resource page by page; the cursor is the CRM's own."""

    async def fetch(client, cursor):
        return await mapper.list(client, resource, SYNC_PAGE_SIZE, cursor)

    return RecordSource(resource_type=resource, fetch=fetch)
