"""The group-commit writer of inbound events: concurrent receipts stored by one transaction, each
answered only once stored; receipts held while the backlog of unprocessed events is over its limit."""

from __future__ import annotations

import asyncio
import hashlib

import pytest
from sqlalchemy import func, select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.jobs.models import Job
from patchbay.core.services import build_services
from patchbay.core.timeutil import new_id, utcnow
from patchbay.core.webhooks import ingest
from patchbay.core.webhooks.ingest import IngestWriter
from patchbay.core.webhooks.models import WebhookEvent

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)


def _row(n: int) -> dict:
    now = utcnow()
    body = f'{{"n": {n}}}'
    return {
        "id": new_id(),
        "workspace_id": None,
        "provider": "facebook",
        "status": "RECEIVED",
        "body": body,
        "body_hash": hashlib.sha256(body.encode()).hexdigest(),
        "connection_hint": None,
        "created_at": now,
        "updated_at": now,
    }


async def _count(app, model, *where) -> int:
    async with app[SERVICES].db.session() as session:
        return await session.scalar(select(func.count()).select_from(model).where(*where))


async def test_concurrent_receipts_share_one_transaction_and_each_returns_once_stored(wh_app, database_url):
    app = wh_app(background=False, database_url=database_url)
    writer = IngestWriter(app[SERVICES].db, app[SERVICES].jobs, batch_ms=20)
    rows = [_row(n) for n in range(30)]
    stored_when_answered = []

    async def receive(row):
        await writer.submit(row)
        stored_when_answered.append(await _count(app, WebhookEvent, WebhookEvent.id == row["id"]))

    try:
        await asyncio.gather(*(receive(row) for row in rows))
    finally:
        await writer.close()
        await app[SERVICES].db.close()
    assert stored_when_answered == [1] * 30
    jobs = await _count(app, Job, Job.kind == "webhooks.process")
    assert jobs < 30  # batches, not one transaction (and job) per receipt


async def test_receipts_are_held_while_the_backlog_is_over_its_limit(wh_app, database_url, monkeypatch):
    monkeypatch.setattr(ingest, "MAX_HOLD_SECONDS", 60.0)
    app = wh_app(background=False, database_url=database_url)
    writer = IngestWriter(app[SERVICES].db, app[SERVICES].jobs, backlog_limit=2)
    try:
        for n in range(3):
            await writer.submit(_row(n))  # no workers: the three stay RECEIVED
        held = asyncio.create_task(writer.submit(_row(3)))
        done, _ = await asyncio.wait({held}, timeout=0.5)
        assert not done  # three unprocessed events, limit two: the fourth receipt waits
        async with app[SERVICES].db.transaction() as session:
            await session.execute(update(WebhookEvent).values(status="PROCESSED").execution_options(synchronize_session=False))
        await asyncio.wait_for(held, timeout=5)  # processed: the receipt is stored and answered
        assert await _count(app, WebhookEvent) == 4
    finally:
        await writer.close()
        await app[SERVICES].db.close()


async def test_the_services_open_the_writer_and_close_it_after_committing_what_is_pending(make_settings):
    """The webhooks domain's ``install`` adds the writer to the services, without a web application:
    what is submitted while they run is committed, and after they stop nothing more is taken."""
    services = build_services(make_settings())
    async with services.running(migrate=False):
        await services.webhook_ingest.submit(_row(1))
        async with services.db.session() as session:
            assert await session.scalar(select(func.count()).select_from(WebhookEvent)) == 1
            assert await session.scalar(select(func.count()).select_from(Job).where(Job.kind == ingest.PROCESS_JOB)) == 1
    with pytest.raises(RuntimeError, match="shutting down"):
        await services.webhook_ingest.submit(_row(2))
