"""Multi-row inserts with one statement text on PostgreSQL (``storage.sql.unnest_insert``): the
leads a batch creates are the rows the ORM's flush writes (NULLs, JSON values, Python defaults) for
1, 2 and 50 leads on SQLite and PostgreSQL, and on PostgreSQL the lead and inbound-event inserts are
one text whatever the number of rows."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, select

from patchbay.core.appkeys import DB, JOBS
from patchbay.core.leads.models import Lead
from patchbay.core.leads.service import NewLead, clean_lead, save_leads
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import new_id, utcnow
from patchbay.core.webhooks.ingest import IngestWriter
from patchbay.core.webhooks.models import WebhookEvent
from patchbay.core.webhooks.protocol import LeadData

_CAPTURED = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
_SET_APART = {"id", "workspace_id", "created_at", "updated_at"}


def _lead_data(n: int) -> LeadData:
    """Leads with and without email, phone and names (NULL columns), custom fields of every JSON kind."""
    fields = {"favourite": ["a", 1, None, {"ü": True}], "note": None, "score": n * 1.5}
    if n % 2:
        fields["email"] = f"person{n}@example.com"
    if n % 3:
        fields["phone"] = f"+44 20 7946 {n:04d}"
    if n % 5:
        fields["full_name"] = f"Person {n}"
    return LeadData(external_id=f"ext-{n}" if n % 4 else None, form_id=None if n % 2 else "form", fields=fields,
                    raw={"n": n, "null": None} if n % 7 else {}, created_at=_CAPTURED + timedelta(seconds=n))  # fmt: skip


def _columns(lead: Lead) -> dict:
    return {column.key: getattr(lead, column.key) for column in Lead.__table__.columns if column.key not in _SET_APART}


async def _stored(db, workspace_id: str) -> list[dict]:
    async with db.session() as session:
        leads = (await session.scalars(select(Lead).where(Lead.workspace_id == workspace_id).order_by(Lead.created_at))).all()
    return [_columns(lead) for lead in leads]


@pytest.mark.parametrize("count", [1, 2, 50])
async def test_a_batch_of_new_leads_stores_the_rows_the_orm_flush_stores(make_app, database_url, count):
    app = make_app(database_url=database_url, background=False)
    db = app[DB]
    ours = (await create_workspace_with_key(app, name="Ours"))["workspace_id"]
    reference = (await create_workspace_with_key(app, name="Reference"))["workspace_id"]
    data = [_lead_data(n) for n in range(1, count + 1)]
    async with db.transaction() as session:
        saved = await save_leads(session, [NewLead(ours, "facebook", item, None, f"event-{i}", "webhook") for i, item in enumerate(data)])
        session.add_all(Lead(workspace_id=reference, provider="facebook", connection_id=None, event_id=f"event-{i}", source="webhook", **clean_lead(item))
                        for i, item in enumerate(data))  # fmt: skip
    try:
        assert [created for _, created in saved] == [True] * count
        stored, expected = await _stored(db, ours), await _stored(db, reference)
        assert stored == expected and len(stored) == count
        assert stored[0]["crm_sync_status"] == "none" and stored[0]["fields"]["favourite"] == ["a", 1, None, {"ü": True}]
        async with db.session() as session:
            rows = {lead.id: lead for lead in (await session.scalars(select(Lead).where(Lead.workspace_id == ours))).all()}
        for lead, _ in saved:  # the answered leads are the stored rows, defaults included
            assert _columns(lead) == _columns(rows[lead.id]) and lead.created_at == rows[lead.id].created_at
    finally:
        await db.close()


async def test_a_lead_created_by_a_batch_can_be_changed_afterwards_in_the_same_transaction(make_app, database_url):
    app = make_app(database_url=database_url, background=False)
    workspace_id = (await create_workspace_with_key(app, name="W"))["workspace_id"]
    async with app[DB].transaction() as session:
        [(lead, _)] = await save_leads(session, [NewLead(workspace_id, "facebook", _lead_data(1), None, None, "webhook")])
        lead.crm_sync_status = "pending"
    try:
        async with app[DB].session() as session:
            assert (await session.scalar(select(Lead.crm_sync_status).where(Lead.id == lead.id))) == "pending"
    finally:
        await app[DB].close()


def _event_row() -> dict:
    now = utcnow()
    body = f'{{"id": "{new_id()}"}}'
    return {"id": new_id(), "workspace_id": None, "provider": "facebook", "status": "RECEIVED", "body": body,
            "body_hash": hashlib.sha256(body.encode()).hexdigest(), "connection_hint": None, "created_at": now, "updated_at": now}  # fmt: skip


async def test_postgresql_sends_one_insert_text_for_1_and_50_leads_and_events(make_app, pg_url):
    app = make_app(database_url=pg_url, background=False)
    db = app[DB]
    workspace_id = (await create_workspace_with_key(app, name="W"))["workspace_id"]
    writer = IngestWriter(db, app[JOBS])
    sent: list[str] = []
    listener = lambda _conn, _cursor, statement, *_: sent.append(statement)  # noqa: E731
    event.listen(db.engine.sync_engine, "before_cursor_execute", listener)
    try:
        for count in (1, 50):
            async with db.transaction() as session:
                await save_leads(session, [NewLead(workspace_id, "facebook", _lead_data(n + count), None, None, "webhook") for n in range(count)])
                await writer._insert(session, [_event_row() for _ in range(count)])
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", listener)
        await db.close()
    for table in ("leads", "webhook_events"):
        texts = [statement for statement in sent if statement.lstrip().startswith(f"INSERT INTO {table}")]
        assert len(texts) == 2 and texts[0] == texts[1], table
    assert "unnest" in next(statement for statement in sent if statement.lstrip().startswith("INSERT INTO leads"))
    async with db.session() as session:
        assert await session.scalar(select(Lead.id).where(Lead.workspace_id == workspace_id).limit(1)) is not None
        assert len((await session.scalars(select(WebhookEvent.id))).all()) == 51
