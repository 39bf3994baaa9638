"""The proxy's audit as entries of the operations timeline (``core.timeline``): proxy calls (and
the calls actions and triggers make), token refreshes (``source`` ``refresh``) and MCP tool calls
(``source`` ``mcp``). The audit never holds a secret: method, path without its query, status,
duration, error."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import and_, or_, select

from patchbay.core.connections.models import ProxyCallLog
from patchbay.core.timeline import Entry, Query

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: the audit's ``source`` of the kinds that are not plain calls
SOURCE_OF_KIND = {"refresh": "refresh", "tool": "mcp"}
KIND_OF_SOURCE = {source: kind for kind, source in SOURCE_OF_KIND.items()}


def _failed():
    return or_(ProxyCallLog.status >= 400, ProxyCallLog.status < 100, ProxyCallLog.error.is_not(None))


def status_of(row: ProxyCallLog) -> str:
    return "failed" if row.status >= 400 or row.status < 100 or row.error else "ok"


def entry_of(row: ProxyCallLog) -> Entry:
    kind = KIND_OF_SOURCE.get(row.source, "proxy")
    return Entry(
        kind=kind,
        id=row.id,
        at=row.created_at,
        status=status_of(row),
        detail_status=str(row.status),
        summary=f"{row.method} {row.path}" + (f" ({row.source})" if kind == "proxy" and row.source != "proxy" else ""),
        provider=row.provider,
        connection_id=row.connection_id,
        duration_ms=row.duration_ms,
    )


async def log_entries(services: Services, query: Query) -> list[Entry]:
    """The audit's entries the query asks for (none when it asks for none of its kinds)."""
    kinds = [kind for kind in ("proxy", "refresh", "tool") if query.wants(kind)]
    if not kinds or query.status == "pending":
        return []
    conditions = query.filters(
        workspace=ProxyCallLog.workspace_id,
        created=ProxyCallLog.created_at,
        row_id=ProxyCallLog.id,
        provider=ProxyCallLog.provider,
        connection=ProxyCallLog.connection_id,
        search=(ProxyCallLog.id, ProxyCallLog.connection_id),
    )
    if len(kinds) < 3:
        sources = [SOURCE_OF_KIND[kind] for kind in kinds if kind in SOURCE_OF_KIND]
        if "proxy" in kinds:
            conditions.append(ProxyCallLog.source.not_in([s for s in SOURCE_OF_KIND.values() if s not in sources]))
        else:
            conditions.append(ProxyCallLog.source.in_(sources))
    if query.status == "failed":
        conditions.append(_failed())
    elif query.status == "ok":
        conditions.append(and_(ProxyCallLog.status < 400, ProxyCallLog.status >= 100, ProxyCallLog.error.is_(None)))
    await services.connections.audit.flush()  # rows still buffered belong on the page
    async with services.db.session(tenant=query.workspace_id) as session:
        rows = await session.scalars(
            select(ProxyCallLog).where(*conditions).order_by(*query.order(ProxyCallLog.created_at, ProxyCallLog.id)).limit(query.limit)
        )
        return [entry_of(row) for row in rows]


async def audit_row(services: Services, *, workspace_id: str, row_id: str) -> ProxyCallLog | None:
    """One audit row of the workspace (None for another workspace's or an unknown id)."""
    await services.connections.audit.flush()
    async with services.db.session(tenant=workspace_id) as session:
        return await session.scalar(select(ProxyCallLog).where(ProxyCallLog.id == row_id, ProxyCallLog.workspace_id == workspace_id))
