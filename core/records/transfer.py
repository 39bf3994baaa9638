"""CSV import of records: each header becomes a field of the record's JSON data; an ``external_id``
(else ``id``) column identifies the record, so importing the same file again updates instead of
duplicating. Streamed and written in batches like table imports."""

from __future__ import annotations

from collections.abc import AsyncIterator

from patchbay.core.errors import Invalid
from patchbay.core.records.service import MAX_EXTERNAL_ID, external_id_of, store_records
from patchbay.core.storage.db import Database
from patchbay.core.tables.csvstream import csv_records, read_header
from patchbay.core.tables.transfer import BATCH, ImportReport

_NAME_LIMIT = 100


def _kind(value, field: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > _NAME_LIMIT:
        raise Invalid(f"Validation failed: '{field}' is required (query parameter or JSON field)")
    return value.strip()


async def import_records(db: Database, *, workspace_id: str, provider_type, resource_type, chunks: AsyncIterator[str]) -> ImportReport:
    provider_type = _kind(provider_type, "providerType")
    resource_type = _kind(resource_type, "resourceType")
    report = ImportReport()
    header: list[str] | None = None
    key_index: int | None = None
    pending: list[tuple[str | None, dict]] = []

    async def flush() -> None:
        if not pending:
            return
        async with db.transaction(tenant=workspace_id) as session:
            created, updated = await store_records(
                session, workspace_id=workspace_id, provider_type=provider_type, resource_type=resource_type, items=pending, source="import"
            )
        report.created += created
        report.updated += len(pending) - created  # repeats of one id within a batch count as updates
        pending.clear()

    async for batch in csv_records(chunks):
        for line, fields in batch:
            if header is None:
                header = read_header(fields)
                key_index = header.index("external_id") if "external_id" in header else header.index("id") if "id" in header else None
                continue
            if len(fields) != len(header):
                report.reject(line, f"expected {len(header)} fields, found {len(fields)}")
                continue
            key = external_id_of(fields[key_index]) if key_index is not None else None
            if key_index is not None and fields[key_index] and key is None:
                report.reject(line, f"external id is longer than {MAX_EXTERNAL_ID} characters")
                continue
            pending.append((key, dict(zip(header, fields, strict=True))))
            if len(pending) >= BATCH:
                await flush()
    if header is None:
        raise Invalid("CSV header line is missing")
    await flush()
    return report
