"""Leads of a batch stored together: one lookup of the known leads, each lead deduplicated against
the stored ones and those before it in the batch, as one call each would."""

from __future__ import annotations

import pytest
from sqlalchemy import event, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.leads.models import Lead
from patchbay.core.leads.store import NewLead, lock_workspace_leads, save_lead, save_leads
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.webhooks.protocol import LeadData

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)


def _lead(external_id: str, email: str | None = None, phone: str | None = None, name: str = "Ada Lovelace") -> LeadData:
    fields = {"full_name": name, **({"email": email} if email else {}), **({"phone_number": phone} if phone else {})}
    return LeadData(external_id=external_id, fields=fields)


async def test_a_batch_of_leads_is_deduplicated_against_the_stored_ones_and_itself_with_one_lookup(make_app, database_url):
    app = make_app(database_url=database_url, background=False)
    first = (await create_workspace_with_key(app, name="First"))["workspace_id"]
    second = (await create_workspace_with_key(app, name="Second"))["workspace_id"]
    async with app[SERVICES].db.transaction() as session:
        known, _ = await save_lead(
            session, workspace_id=first, provider="facebook", data=_lead("old", phone="+44 20 7946 0001"), connection_id=None, event_id=None, source="webhook"
        )
    items = [
        NewLead(first, "facebook", _lead("l-1", email="grace@example.com"), None, "e1", "webhook"),
        NewLead(first, "facebook", _lead("l-2", email="GRACE@example.com", name="Grace Hopper"), None, "e2", "webhook"),  # same person as e1
        NewLead(first, "facebook", _lead("l-3", phone="+44 20 7946 0001", name="Ada King"), None, "e3", "webhook"),  # the stored lead
        NewLead(second, "facebook", _lead("l-4", email="grace@example.com"), None, "e4", "webhook"),  # another workspace: its own lead
    ]
    lookups = []

    def count(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("SELECT") and "FROM leads" in statement:
            lookups.append(statement)

    event.listen(app[SERVICES].db.engine.sync_engine, "before_cursor_execute", count)
    try:
        async with app[SERVICES].db.transaction() as session:
            for workspace_id in sorted({first, second}):
                await lock_workspace_leads(session, workspace_id)
            saved = await save_leads(session, items)
    finally:
        event.remove(app[SERVICES].db.engine.sync_engine, "before_cursor_execute", count)
    assert len(lookups) == 1
    assert [created for _, created in saved] == [True, False, False, True]
    assert saved[0][0].id == saved[1][0].id and saved[1][0].full_name == "Grace Hopper"
    assert saved[2][0].id == known.id and saved[2][0].full_name == "Ada King"
    assert saved[3][0].workspace_id == second and saved[3][0].id != saved[0][0].id
    async with app[SERVICES].db.session() as session:
        rows = (await session.scalars(select(Lead).order_by(Lead.workspace_id, Lead.external_id))).all()
    assert sorted((row.workspace_id, row.external_id, row.event_id) for row in rows) == sorted(
        [(first, "old", None), (first, "l-1", "e1"), (second, "l-4", "e4")]
    )
