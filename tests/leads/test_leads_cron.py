"""The periodic jobs of this area: renew-webhook-subscriptions, resume-imports (retry-failed-syncs is
exercised with the CRM push)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.jobs.models import Job
from patchbay.core.leads.models import LeadImport
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks.models import WebhookRegistration
from patchbay.testing import add_connection


async def test_renewal_subscribes_each_page_once_until_due_again(wh_app, graph, aiohttp_client):
    app = (await aiohttp_client(wh_app(background=False))).server.app
    ws = await create_workspace_with_key(app)
    good = await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    bad = await add_connection(app, ws["workspace_id"], "facebook", meta={})
    assert set(app[SERVICES].cron.jobs) >= {"renew-webhook-subscriptions", "resume-imports", "retry-failed-syncs"}
    summary = await app[SERVICES].cron.jobs["renew-webhook-subscriptions"].run(app[SERVICES])
    assert summary == {"renewed": 1, "failed": 1}
    assert [(m, p, q) for m, p, q, _ in graph.requests] == [("POST", "/page-A/subscribed_apps", {"subscribed_fields": "leadgen"})]
    async with app[SERVICES].db.session() as session:
        rows = {r.connection_id: r for r in (await session.scalars(select(WebhookRegistration))).all()}
    assert rows[good].status == "active" and rows[bad].status == "failed" and "page_id" in rows[bad].error
    graph.requests.clear()
    again = await app[SERVICES].cron.jobs["renew-webhook-subscriptions"].run(app[SERVICES])
    assert again == {"renewed": 0, "failed": 1}  # the healthy one is not due; the failed one is retried
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(WebhookRegistration).where(WebhookRegistration.connection_id == good).values(renewed_at=utcnow() - timedelta(days=8)))
    assert (await app[SERVICES].cron.jobs["renew-webhook-subscriptions"].run(app[SERVICES]))["renewed"] == 1


async def test_resume_imports_requeues_an_import_that_stopped_moving(wh_app):
    app = wh_app(background=False)
    ws = await create_workspace_with_key(app)
    connection_id = await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
    async with app[SERVICES].db.transaction(tenant=ws["workspace_id"]) as session:
        stale = LeadImport(provider="facebook", connection_id=connection_id, status="running", pages=3, updated_at=utcnow() - timedelta(hours=1))
        fresh = LeadImport(provider="facebook", connection_id=connection_id, status="running", pages=1)
        done = LeadImport(provider="facebook", connection_id=connection_id, status="completed", pages=2, updated_at=utcnow() - timedelta(hours=1))
        session.add_all([stale, fresh, done])
    assert await app[SERVICES].cron.jobs["resume-imports"].run(app[SERVICES]) == {"resumed": 1}
    assert await app[SERVICES].cron.jobs["resume-imports"].run(app[SERVICES]) == {"resumed": 0}  # once per period
    async with app[SERVICES].db.session() as session:
        jobs = (await session.scalars(select(Job).where(Job.kind == "leads.import"))).all()
    assert [j.payload for j in jobs] == [{"import_id": stale.id}]
