"""A user's data deletion request removes the leads captured with their email (every workspace),
and the copies of them in forwarded events and in the bytes their deliveries send."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.compliance.models import DeletionRequest
from patchbay.core.leads.models import Lead, LeadSync
from patchbay.core.leads.store import save_lead
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.users.service import create_user
from patchbay.core.webhooks.delivery import create_deliveries
from patchbay.core.webhooks.models import WebhookDelivery, WebhookEvent, WebhookSubscription
from patchbay.core.webhooks.protocol import LeadData


async def test_leads_eraser_removes_the_users_leads_only(make_app):
    app = make_app()
    assert "leads" in app[SERVICES].erasers
    first = await create_workspace_with_key(app, name="One")
    second = await create_workspace_with_key(app, name="Two")
    async with app[SERVICES].db.transaction() as session:
        user = await create_user(session, email="Ada@Example.com", password="a-long-password-1")
        for ws, external in ((first, "1"), (second, "2")):
            lead, _ = await save_lead(
                session,
                workspace_id=ws["workspace_id"],
                provider="facebook",
                data=LeadData(external_id=external, fields={"email": "ada@example.com"}),
                connection_id=None,
                event_id=None,
                source="import",
            )
            session.add(LeadSync(workspace_id=ws["workspace_id"], lead_id=lead.id, connection_id="c", provider="hubspot"))
            session.add(
                WebhookEvent(
                    workspace_id=ws["workspace_id"],
                    provider="facebook",
                    status="PROCESSED",
                    lead_id=lead.id,
                    payload={"leadgen_id": external, "lead": {"email": "ada@example.com"}},
                )
            )
        await save_lead(
            session,
            workspace_id=first["workspace_id"],
            provider="facebook",
            data=LeadData(external_id="3", fields={"email": "other@example.com"}),
            connection_id=None,
            event_id=None,
            source="import",
        )
    async with app[SERVICES].db.transaction() as session:
        removed = await app[SERVICES].erasers["leads"](session, DeletionRequest(source="user", subject=user.id, confirmation_code="x"))
        assert await app[SERVICES].erasers["leads"](session, DeletionRequest(source="meta", subject="12345", confirmation_code="y")) == 0
    assert removed == 2
    async with app[SERVICES].db.session() as session:
        assert (await session.scalars(select(Lead.email))).all() == ["other@example.com"]
        assert await session.scalar(select(func.count()).select_from(LeadSync)) == 0
        payloads = (await session.scalars(select(WebhookEvent.payload))).all()
    assert all("lead" not in p for p in payloads) and {p["leadgen_id"] for p in payloads} == {"1", "2"}


@pytest.mark.both_databases
async def test_the_lead_leaves_the_stored_bytes_of_the_events_deliveries_too(make_app, database_url):
    app = make_app(database_url=database_url)
    ws = await create_workspace_with_key(app)
    async with app[SERVICES].db.transaction() as session:
        user = await create_user(session, email="ada@example.com", password="a-long-password-1")
        lead, _ = await save_lead(
            session,
            workspace_id=ws["workspace_id"],
            provider="facebook",
            data=LeadData(external_id="1", fields={"email": "ada@example.com"}),
            connection_id=None,
            event_id=None,
            source="import",
        )
        session.add(WebhookSubscription(workspace_id=ws["workspace_id"], provider="facebook", url="https://hooks.example.com/in", events=["*"]))
        event = WebhookEvent(
            workspace_id=ws["workspace_id"],
            provider="facebook",
            status="PROCESSED",
            event_type="leadgen",
            lead_id=lead.id,
            payload={"zeta": "z", "lead": {"email": "ada@example.com"}, "alpha": 2},
        )
        session.add(event)
        await session.flush()
        (delivery,) = await create_deliveries(app[SERVICES].jobs, session, event)
    assert b"ada@example.com" in delivery.body
    async with app[SERVICES].db.transaction() as session:
        await app[SERVICES].erasers["leads"](session, DeletionRequest(source="user", subject=user.id, confirmation_code="x"))
    async with app[SERVICES].db.session() as session:
        body = await session.scalar(select(WebhookDelivery.body).where(WebhookDelivery.id == delivery.id))
    assert b"ada@example.com" not in body and body.endswith(b'"data":{"zeta":"z","alpha":2}}')  # the rest as it was sent
