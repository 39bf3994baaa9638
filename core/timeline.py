"""The operations timeline's query, shared by the domains that hold its rows (the proxy's audit in
``core.connections``, inbound events and deliveries in ``core.webhooks``, executions in
``core.flows``) and the console's Logs page that merges them.

Every entry is keyed by ``(at, id)`` (its creation moment, then its id), newest first. A page is
asked :class:`before` the key of the last entry seen (keyset paging: each table answers at most
``limit`` rows from an index on ``(workspace_id, created_at)``, never an OFFSET); the live tail
asks :class:`after` the newest key seen. Each domain's ``log_entries(services, query)`` answers
:class:`Entry` rows in that order; the merge of several stays ordered because the key is total.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs
from sqlalchemy import and_, or_
from sqlalchemy.sql.elements import ColumnElement

from patchbay.core.errors import Invalid

#: the kinds of entry, in the order the filter lists them
KINDS = ("proxy", "refresh", "tool", "inbound", "delivery", "execution")
KIND_LABELS = {
    "proxy": "Proxy call",
    "refresh": "Token refresh",
    "tool": "Tool call",
    "inbound": "Inbound event",
    "delivery": "Delivery",
    "execution": "Execution",
}
#: one status vocabulary across kinds: ok, failed, pending (each kind maps its own onto it)
STATUSES = ("ok", "failed", "pending")


@attrs.frozen
class Key:
    """An entry's place in the timeline."""

    at: datetime
    id: str

    def encode(self) -> str:
        return base64.urlsafe_b64encode(f"{self.at.isoformat()}|{self.id}".encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str, name: str = "cursor") -> Key:
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
            moment, row_id = raw.split("|", 1)
            at = datetime.fromisoformat(moment)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise Invalid(f"Query parameter '{name}' is not valid") from None
        if at.tzinfo is None or not row_id:
            raise Invalid(f"Query parameter '{name}' is not valid")
        return cls(at, row_id)


@attrs.frozen(kw_only=True)
class Query:
    """What the Logs page asks: a workspace's entries of ``kinds`` (all when empty), filtered by
    ``provider``, ``connection_id``, ``status`` (one of :data:`STATUSES`), ``since``/``until``
    (creation moment), ``search`` (an id: the entry's own or one it refers to), ``before`` a key
    (a page, newest first) or ``after`` one (the tail, oldest first), at most ``limit``."""

    workspace_id: str
    kinds: frozenset[str] = frozenset()
    provider: str | None = None
    connection_id: str | None = None
    status: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    search: str | None = None
    before: Key | None = None
    after: Key | None = None
    limit: int = 50

    def wants(self, kind: str) -> bool:
        return not self.kinds or kind in self.kinds

    def window(self, created: Any, row_id: Any) -> list[ColumnElement[bool]]:
        """The conditions on a table's creation column and id: the time range and the keyset."""
        conditions = []
        if self.since is not None:
            conditions.append(created >= self.since)
        if self.until is not None:
            conditions.append(created < self.until)
        # the plain bound beside the OR lets the index on (workspace_id, created_at) start at the key
        if self.before is not None:
            conditions += [created <= self.before.at, or_(created < self.before.at, and_(created == self.before.at, row_id < self.before.id))]
        if self.after is not None:
            conditions += [created >= self.after.at, or_(created > self.after.at, and_(created == self.after.at, row_id > self.after.id))]
        return conditions

    def filters(
        self,
        *,
        workspace: Any,
        created: Any,
        row_id: Any,
        provider: Any = None,
        connection: Any = None,
        status: tuple[Any, Mapping[str, tuple[str, ...]]] | None = None,
        search: Sequence[Any] = (),
    ) -> list[ColumnElement[bool]]:
        """The conditions every kind shares, on a kind's own columns: its workspace, the window, and
        ``provider``, ``connection``, ``status`` (the column and what each of :data:`STATUSES` means
        in it) and ``search`` (the id columns) where the kind has them; a kind filters what it names
        differently itself."""
        conditions = [workspace == self.workspace_id, *self.window(created, row_id)]
        if self.provider and provider is not None:
            conditions.append(provider == self.provider)
        if self.connection_id and connection is not None:
            conditions.append(connection == self.connection_id)
        if self.status and status is not None:
            column, meaning = status
            conditions.append(column.in_(meaning[self.status]))
        if self.search and search:
            conditions.append(or_(*(column == self.search for column in search)))
        return conditions

    def order(self, created: Any, row_id: Any) -> tuple[Any, Any]:
        """Newest first for a page, oldest first for the tail."""
        if self.after is not None:
            return created.asc(), row_id.asc()
        return created.desc(), row_id.desc()


@attrs.frozen(kw_only=True)
class Entry:
    """One line of the timeline (never a secret: what the list shows)."""

    kind: str
    id: str
    at: datetime
    status: str
    #: the kind's own status (``200``, ``FAILED``, ``succeeded``, ``running``)
    detail_status: str
    summary: str
    provider: str | None = None
    connection_id: str | None = None
    duration_ms: float | None = None

    @property
    def key(self) -> Key:
        return Key(self.at, self.id)

    @property
    def kind_label(self) -> str:
        return KIND_LABELS[self.kind]

    def json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "kindLabel": self.kind_label,
            "id": self.id,
            "at": self.at.isoformat(),
            "status": self.status,
            "detailStatus": self.detail_status,
            "summary": self.summary,
            "provider": self.provider,
            "connectionId": self.connection_id,
            "durationMs": self.duration_ms,
            "key": self.key.encode(),
        }


def merge(query: Query, *groups: list[Entry]) -> list[Entry]:
    """The first ``query.limit`` entries of several domains' answers, in the timeline's order."""
    entries = [entry for group in groups for entry in group]
    entries.sort(key=lambda entry: (entry.at, entry.id), reverse=query.after is None)
    return entries[: query.limit]
