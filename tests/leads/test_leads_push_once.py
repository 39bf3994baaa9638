"""One CRM push per lead and destination, whatever the concurrency: retry-sync, push-batch, push,
the retry cron and several workers racing on PostgreSQL against a local CRM counting creates."""

from __future__ import annotations

import asyncio

from sqlalchemy import func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.crm_push.service import retry_failed_syncs, schedule_push
from patchbay.core.jobs.models import Job
from patchbay.core.jobs.worker import Worker
from patchbay.core.leads.models import Lead, LeadSync
from patchbay.core.testing import create_workspace_with_key
from patchbay.providers.hubspot.testing import FakeCrm
from patchbay.testing import add_connection

ROUNDS = 4


async def _jobs_settled(app) -> bool:
    async with app[SERVICES].db.session() as session:
        return not await session.scalar(select(func.count()).select_from(Job).where(Job.status.in_(("queued", "running"))))


async def _run_workers(app, count: int = 3) -> None:
    workers = [Worker(app[SERVICES], app[SERVICES].jobs, poll_seconds=0.02) for _ in range(count)]
    tasks = [asyncio.create_task(worker.run()) for worker in workers]
    try:
        deadline = asyncio.get_running_loop().time() + 60
        while not await _jobs_settled(app):
            assert asyncio.get_running_loop().time() < deadline, "jobs did not settle"
            await asyncio.sleep(0.05)
    finally:
        for worker in workers:
            worker.stop()
        await asyncio.gather(*tasks)


async def test_one_push_per_lead_and_destination_whatever_the_concurrency(pg_url, wh_app, aiohttp_client):
    crm = await FakeCrm().start()
    try:
        client = await aiohttp_client(wh_app(background=False, database_url=pg_url, providers={"hubspot": {"api_base_url": crm.url}}))
        app = client.server.app
        ws = await create_workspace_with_key(app)
        workspace_id = ws["workspace_id"]
        await add_connection(app, workspace_id, "hubspot", credentials={"access_token": "hs-token"})
        async with app[SERVICES].db.transaction(tenant=workspace_id) as session:
            lead = Lead(workspace_id=workspace_id, provider="facebook", external_id="lead-1", first_name="Ada", source="webhook")
            session.add(lead)
            await session.flush()
            lead_id = lead.id

        async def schedule_directly():
            async with app[SERVICES].db.transaction(tenant=workspace_id) as session:
                return await schedule_push(app[SERVICES], session, await session.get(Lead, lead_id))

        async def everyone_at_once():
            answers = await asyncio.gather(
                *(schedule_directly() for _ in range(ROUNDS)),
                *(client.post(f"/crm/push-batch/{workspace_id}", headers=ws["headers"]) for _ in range(ROUNDS)),
                *(client.post(f"/crm/push/{lead_id}", headers=ws["headers"]) for _ in range(ROUNDS)),
                *(client.post(f"/leads/{lead_id}/retry-sync", headers=ws["headers"]) for _ in range(ROUNDS)),
                *(retry_failed_syncs(app[SERVICES]) for _ in range(ROUNDS)),
            )
            assert all(a.status < 300 for a in answers if hasattr(a, "status")), [a.status for a in answers if hasattr(a, "status")]

        def creates() -> int:
            return sum(1 for r in crm.requests if r["method"] == "POST" and r["path"] == "/crm/v3/objects/contacts")

        crm.fail_next = [503]  # the first push fails: a retry is due
        await asyncio.gather(everyone_at_once(), _run_workers(app))
        await _run_workers(app)
        assert creates() == 1
        await asyncio.gather(everyone_at_once(), _run_workers(app))  # everyone retries the failed push at once
        await _run_workers(app)
        assert creates() == 2
        await asyncio.gather(everyone_at_once(), _run_workers(app))  # synced: nobody pushes again
        await _run_workers(app)
        assert creates() == 2
        async with app[SERVICES].db.session() as session:
            (sync,) = (await session.scalars(select(LeadSync))).all()
        assert (sync.status, sync.attempts, sync.external_id) == ("synced", 2, "1000")
    finally:
        await crm.close()
