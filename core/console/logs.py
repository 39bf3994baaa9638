"""The Logs page's reads: one timeline merged from the domains that hold its rows (the proxy's
audit, inbound events and deliveries, executions; see ``core.timeline``), and what a detail pane
may show of a stored body: secrets redacted, cut at :data:`BODY_LIMIT`."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import attrs

from patchbay.core.connections import timeline as audit_timeline
from patchbay.core.flows import timeline as flows_timeline
from patchbay.core.timeline import Entry, Key, Query, merge
from patchbay.core.webhooks import timeline as webhooks_timeline

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: characters of a body a detail pane shows; the rest is cut with a note
BODY_LIMIT = 4096
REDACTED = "[redacted]"
#: a key whose value is a secret wherever it appears (headers, bodies, step inputs): compared
#: lower-cased with ``-`` as ``_``
SECRET_KEYS = re.compile(
    r"(^|_)(authorization|proxy_authorization|cookie|set_cookie|password|passwd|secret|client_secret|api_?key|x_api_key|apikey|"
    r"token|access_token|refresh_token|id_token|session|signature|private_key|credentials?)($|_)"
)
#: secrets inside free text (an error message, a response excerpt that is not JSON)
SECRET_TEXT = (
    (re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED),
    (
        re.compile(r"(?i)((?:access_token|refresh_token|id_token|api_?key|apikey|client_secret|password|token|secret)[\"']?\s*[:=]\s*[\"']?)[^\s\"'&,}]+"),
        r"\1" + REDACTED,
    ),
)


async def timeline(services: Services, query: Query) -> tuple[list[Entry], Key | None]:
    """A page of the timeline (or the tail: ``query.after``) and the key of the next page (None on
    the last). Each domain answers at most ``limit + 1`` rows: one more tells whether more follow."""
    asked = attrs.evolve(query, limit=query.limit + 1)
    groups = [
        await audit_timeline.log_entries(services, asked),
        await webhooks_timeline.log_entries(services, asked),
        await flows_timeline.log_entries(services, asked),
    ]
    entries = merge(asked, *groups)
    more = len(entries) > query.limit
    entries = entries[: query.limit]
    return entries, (entries[-1].key if more and entries and query.after is None else None)


def secret_key(name: str) -> bool:
    return bool(SECRET_KEYS.search(name.lower().replace("-", "_")))


def redact(value: Any) -> Any:
    """``value`` with the values of secret keys replaced by ``[redacted]`` (at any depth), and
    secrets in free text masked."""
    if isinstance(value, dict):
        return {key: (REDACTED if isinstance(key, str) and secret_key(key) and value[key] not in (None, "") else redact(item)) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, str):
        for pattern, replacement in SECRET_TEXT:
            value = pattern.sub(replacement, value)
        return value
    return value


def shown(value: Any, *, limit: int = BODY_LIMIT) -> str | None:
    """A body for a detail pane: JSON (also JSON text or bytes) pretty-printed with its secrets
    redacted, other text masked; cut at ``limit`` characters with a note of how much was left."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            text = redact(value)
        else:
            text = None
    else:
        text = None
    if text is None:
        text = json.dumps(redact(value), indent=2, ensure_ascii=False, default=str)
    if len(text) > limit:
        return text[:limit] + f"\n… cut: {len(text) - limit} more characters not shown"
    return text
