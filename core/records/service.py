"""Provider records: stored in batches by the data-sync job and CSV imports, browsed, searched,
summarised and replayed into flows.

A record is identified within its workspace by ``(providerType, resourceType, externalId)``: a record
seen again (a re-sync, a re-import of the same file) updates the stored one instead of adding a copy.
Records without an external id are always added.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import String, and_, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.errors import NotFound
from patchbay.core.records.models import Record
from patchbay.core.tables import bulk
from patchbay.core.tables.search import index_bulk_inserts, last_rowid, matches, search_text_of
from patchbay.core.tables.service import paged
from patchbay.core.timeutil import iso, utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services

MAX_EXTERNAL_ID = 255


def record_json(record: Record) -> dict[str, Any]:
    return {
        "id": record.id,
        "providerType": record.provider_type,
        "resourceType": record.resource_type,
        "externalId": record.external_id,
        "connectionId": record.connection_id,
        "source": record.source,
        "data": record.data,
        "createdAt": iso(record.created_at),
        "updatedAt": iso(record.updated_at),
    }


async def get_record(session: AsyncSession, workspace_id: str, record_id: str) -> Record:
    record = await session.scalar(select(Record).where(Record.id == record_id, Record.workspace_id == workspace_id))
    if record is None:
        raise NotFound(f"Record not found: {record_id}")
    return record


async def record_of(services: Services, workspace_id: str, record_id: str) -> Record:
    """The workspace's record ``record_id``; NotFound when there is none."""
    async with services.db.session(tenant=workspace_id) as session:
        return await get_record(session, workspace_id, record_id)


async def delete_record(services: Services, workspace_id: str, record_id: str) -> None:
    async with services.db.transaction(tenant=workspace_id) as session:
        await session.delete(await get_record(session, workspace_id, record_id))


async def list_records(
    services: Services,
    workspace_id: str,
    *,
    page: int,
    limit: int,
    resource_type: str | None = None,
    provider_type: str | None = None,
    search: str | None = None,
) -> tuple[list[Record], int]:
    conditions = [Record.workspace_id == workspace_id]
    if resource_type:
        conditions.append(Record.resource_type == resource_type)
    if provider_type:
        conditions.append(Record.provider_type == provider_type)
    async with services.db.session(tenant=workspace_id) as session:
        if search:
            condition = matches(session.bind.dialect.name, Record.__table__, search)
            if condition is not None:
                conditions.append(condition)
        return await paged(session, Record, and_(*conditions), (Record.updated_at.desc(), Record.id.desc()), page, limit)


async def summary(services: Services, workspace_id: str) -> dict[str, Any]:
    """Counts by (resource type, provider), and the totals per resource type and per provider."""
    async with services.db.session(tenant=workspace_id) as session:
        result = await session.execute(
            select(Record.resource_type, Record.provider_type, func.count())
            .where(Record.workspace_id == workspace_id)
            .group_by(Record.resource_type, Record.provider_type)
            .order_by(Record.resource_type, Record.provider_type)
        )
        groups = [{"resourceType": resource, "providerType": provider, "count": count} for resource, provider, count in result.all()]
    by_resource: dict[str, int] = {}
    by_provider: dict[str, int] = {}
    for group in groups:
        by_resource[group["resourceType"]] = by_resource.get(group["resourceType"], 0) + group["count"]
        by_provider[group["providerType"]] = by_provider.get(group["providerType"], 0) + group["count"]
    return {"total": sum(by_resource.values()), "byResourceType": by_resource, "byProvider": by_provider, "groups": groups}


# ---------------------------------------------------------------------------------------------
# Storing records in batches
# ---------------------------------------------------------------------------------------------

_PG_BY_EXTERNAL_IDS = text(
    # one index probe per id, whatever the planner's (possibly stale) statistics say
    "SELECT r.id, r.external_id FROM unnest(CAST(:ids AS varchar[])) AS k(external_id) CROSS JOIN LATERAL "
    "(SELECT x.id, x.external_id FROM records x WHERE x.workspace_id = :workspace_id AND x.provider_type = :provider_type "
    "AND x.resource_type = :resource_type AND x.external_id = k.external_id LIMIT 1) AS r"
).columns(id=String, external_id=String)


async def _existing(session: AsyncSession, workspace_id: str, provider_type: str, resource_type: str, external_ids: list[str]) -> dict[str, str]:
    """external id -> record id of the records already stored."""
    if not external_ids:
        return {}
    if session.bind.dialect.name == "postgresql":
        params = {"ids": external_ids, "workspace_id": workspace_id, "provider_type": provider_type, "resource_type": resource_type}
        return {external_id: record_id for record_id, external_id in (await session.execute(_PG_BY_EXTERNAL_IDS, params)).all()}
    found: dict[str, str] = {}
    columns = Record.__table__.c
    for start in range(0, len(external_ids), 900):
        result = await session.execute(
            select(columns.id, columns.external_id).where(
                columns.workspace_id == workspace_id,
                columns.provider_type == provider_type,
                columns.resource_type == resource_type,
                columns.external_id.in_(external_ids[start : start + 900]),
            )
        )
        found.update({external_id: record_id for record_id, external_id in result.all()})
    return found


def external_id_of(value: Any) -> str | None:
    if value is None or value == "":
        return None
    value = str(value)
    return value if len(value) <= MAX_EXTERNAL_ID else None


async def store_records(
    session: AsyncSession,
    *,
    workspace_id: str,
    provider_type: str,
    resource_type: str,
    items: Sequence[tuple[str | None, dict[str, Any]]],
    source: str,
    connection_id: str | None = None,
) -> tuple[int, int]:
    """Insert or update ``items`` (``(external_id, data)``) in the session's transaction; a record
    with a known external id has its data replaced. Answers ``(created, updated)``."""
    latest: dict[str, dict[str, Any]] = {}  # the last occurrence of an id in the batch wins
    anonymous: list[dict[str, Any]] = []
    for external_id, data in items:
        if external_id is None:
            anonymous.append(data)
        else:
            latest[external_id] = data
    known = await _existing(session, workspace_id, provider_type, resource_type, list(latest))
    now = utcnow()
    fresh = iter(bulk.ordered_ids(len(items)))
    inserts = [{"id": next(fresh), "external_id": None, "data": data, "search_text": search_text_of(data.values())} for data in anonymous]
    updates = []
    for external_id, data in latest.items():
        row = {"external_id": external_id, "data": data, "search_text": search_text_of(data.values())}
        if external_id in known:
            updates.append({**row, "id": known[external_id], "updated_at": now, "connection_id": connection_id, "source": source})
        else:
            inserts.append({**row, "id": next(fresh)})
    constants = {
        "workspace_id": workspace_id,
        "provider_type": provider_type,
        "resource_type": resource_type,
        "connection_id": connection_id,
        "source": source,
        "created_at": now,
        "updated_at": now,
    }
    table = Record.__table__
    after = await last_rowid(session, table)
    await bulk.insert_rows(session, table, inserts, constants)
    await index_bulk_inserts(session, table, after)
    await bulk.update_rows(session, table, updates, ["external_id", "data", "search_text", "updated_at", "connection_id", "source"])
    return len(inserts), len(updates)


async def replay(services: Services, workspace_id: str, record_id: str) -> int:
    """Re-fire every active trigger subscription matching the record's (providerType,
    resourceType) with the record as the trigger payload; answers the executions started."""
    from patchbay.core.flows.triggers import fire_matching_triggers

    async with services.db.transaction(tenant=workspace_id) as session:
        record = await get_record(session, workspace_id, record_id)
        return await fire_matching_triggers(
            services,
            session,
            workspace_id=record.workspace_id,
            provider_type=record.provider_type,
            event_type=record.resource_type,
            payload=record_json(record),
            source="records",
        )
