"""The group-commit writer of inbound events: concurrent receipts stored by one transaction, each
answered only once stored; receipts held while the backlog of unprocessed events is over its limit."""

from __future__ import annotations

import asyncio
import hashlib

import pytest
from sqlalchemy import func, select, update

from patchbay.core.appkeys import DB, JOBS
from patchbay.core.jobs.models import Job
from patchbay.core.timeutil import new_id, utcnow
from patchbay.core.webhooks import ingest
from patchbay.core.webhooks.ingest import IngestWriter
from patchbay.core.webhooks.models import WebhookEvent

pytestmark = pytest.mark.both_databases  # storage behaviour differs between SQLite and PostgreSQL here (docs/testing.md)


def _row(n: int) -> dict:
    now = utcnow()
    body = f'{{"n": {n}}}'
    return {"id": new_id(), "workspace_id": None, "provider": "facebook", "status": "RECEIVED", "body": body,
            "body_hash": hashlib.sha256(body.encode()).hexdigest(), "connection_hint": None, "created_at": now, "updated_at": now}  # fmt: skip


async def _count(app, model, *where) -> int:
    async with app[DB].session() as session:
        return await session.scalar(select(func.count()).select_from(model).where(*where))


async def test_concurrent_receipts_share_one_transaction_and_each_returns_once_stored(wh_app, database_url):
    app = wh_app(background=False, database_url=database_url)
    writer = IngestWriter(app[DB], app[JOBS], batch_ms=20)
    rows = [_row(n) for n in range(30)]
    stored_when_answered = []

    async def receive(row):
        await writer.submit(row)
        stored_when_answered.append(await _count(app, WebhookEvent, WebhookEvent.id == row["id"]))

    try:
        await asyncio.gather(*(receive(row) for row in rows))
    finally:
        await writer.close()
        await app[DB].close()
    assert stored_when_answered == [1] * 30
    jobs = await _count(app, Job, Job.kind == "webhooks.process")
    assert jobs < 30  # batches, not one transaction (and job) per receipt


async def test_receipts_are_held_while_the_backlog_is_over_its_limit(wh_app, database_url, monkeypatch):
    monkeypatch.setattr(ingest, "MAX_HOLD_SECONDS", 60.0)
    app = wh_app(background=False, database_url=database_url)
    writer = IngestWriter(app[DB], app[JOBS], backlog_limit=2)
    try:
        for n in range(3):
            await writer.submit(_row(n))  # no workers: the three stay RECEIVED
        held = asyncio.create_task(writer.submit(_row(3)))
        done, _ = await asyncio.wait({held}, timeout=0.5)
        assert not done  # three unprocessed events, limit two: the fourth receipt waits
        async with app[DB].transaction() as session:
            await session.execute(update(WebhookEvent).values(status="PROCESSED").execution_options(synchronize_session=False))
        await asyncio.wait_for(held, timeout=5)  # processed: the receipt is stored and answered
        assert await _count(app, WebhookEvent) == 4
    finally:
        await writer.close()
        await app[DB].close()
