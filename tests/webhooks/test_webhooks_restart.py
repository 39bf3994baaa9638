"""Restart safety: a ``patchbay serve`` process killed right after answering 200 loses nothing; on
restart the event is processed and forwarded exactly once."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy import select

from patchbay.core.app import create_app
from patchbay.core.appkeys import SERVICES
from patchbay.core.jobs.models import Job
from patchbay.core.settings import load_settings
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.webhooks.models import WebhookDelivery, WebhookEvent, WebhookSubscription
from patchbay.providers.meta.testing import meta_signature, page_event_payload
from patchbay.testing import add_connection

APP_SECRET = "restart-app-secret"
PATCHBAY = str(Path(sys.executable).parent / "patchbay")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def start_server(environ: dict[str, str], port: int) -> asyncio.subprocess.Process:
    process = await asyncio.create_subprocess_exec(
        PATCHBAY, "serve", env={**os.environ, **environ, "PATCHBAY_PORT": str(port)}, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    async with aiohttp.ClientSession() as session:
        for _ in range(300):
            try:
                async with session.get(f"http://127.0.0.1:{port}/health") as response:
                    if response.status == 200:
                        return process
            except aiohttp.ClientError:
                pass
            if process.returncode is not None:
                raise AssertionError("patchbay serve exited at start")
            await asyncio.sleep(0.1)
    process.kill()
    raise AssertionError("patchbay serve did not start")


@pytest.mark.both_databases
@pytest.mark.slow  # a patchbay process killed and restarted
async def test_event_survives_a_kill_right_after_the_200(database_url, tmp_path, receivers, helpers):
    receiver = await receivers()
    config = tmp_path / "patchbay.toml"
    config.write_text(f'[providers.facebook]\nwebhook_secret = "{APP_SECRET}"\n\n[webhooks]\nretry_base_ms = 50\nretry_cap_ms = 100\n')
    environ = {
        "PATCHBAY_SECRET_KEY": "restart-test-secret",
        "PATCHBAY_DATA_DIR": str(tmp_path / "data"),
        "PATCHBAY_DATABASE_URL": database_url,
        "PATCHBAY_SCHEDULER": "false",
        "PATCHBAY_ALLOW_INSECURE_TARGETS": "true",
        "PATCHBAY_CONFIG": str(config),
        "PATCHBAY_LOG_LEVEL": "WARNING",
    }
    app = create_app(load_settings({}, environ), background=False)  # for set-up and checks only
    try:
        ws = await create_workspace_with_key(app)
        await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"})
        async with app[SERVICES].db.transaction(tenant=ws["workspace_id"]) as session:
            session.add(WebhookSubscription(provider="facebook", url=receiver.url, events=["*"], secret=app[SERVICES].secrets.encrypt("cb-secret-1234")))

        # 1. a server without workers: it can only store the event, never process it
        port = free_port()
        first = await start_server({**environ, "PATCHBAY_WORKERS": "0"}, port)
        body = json.dumps(page_event_payload("page-A", value={"n": 1})).encode()
        async with aiohttp.ClientSession() as session:
            async with session.post(
                f"http://127.0.0.1:{port}/webhook/facebook", data=body, headers={"x-hub-signature-256": meta_signature(APP_SECRET, body)}
            ) as response:
                assert response.status == 200
                event_id = (await response.json())["id"]
        first.send_signal(signal.SIGKILL)  # right after the 200: no graceful shutdown
        await first.wait()
        async with app[SERVICES].db.session() as session:
            event = await session.get(WebhookEvent, event_id)
            job = await session.scalar(select(Job).where(Job.kind == "webhooks.process"))
        assert event.status == "RECEIVED" and job.status == "queued" and receiver.requests == []

        # 2. restarted with workers: processed and forwarded once
        second = await start_server({**environ, "PATCHBAY_WORKERS": "4"}, free_port())
        try:
            await receiver.wait_for(1, timeout=30)

            async def delivered():
                async with app[SERVICES].db.session() as session:
                    return await session.scalar(select(WebhookDelivery).where(WebhookDelivery.status == "succeeded"))

            await helpers.wait_until(delivered, timeout=30)
            await asyncio.sleep(1.0)  # room for a second (wrong) delivery to show up
        finally:
            second.send_signal(signal.SIGTERM)
            await asyncio.wait_for(second.wait(), 30)
        assert len(receiver.requests) == 1
        assert receiver.requests[0]["headers"]["X-Connect-Delivery"] == event_id
        async with app[SERVICES].db.session() as session:
            event = await session.get(WebhookEvent, event_id)
            deliveries = (await session.scalars(select(WebhookDelivery))).all()
        assert event.status == "PROCESSED" and event.workspace_id == ws["workspace_id"]
        assert [(d.status, d.attempts) for d in deliveries] == [("succeeded", 1)]
    finally:
        await app[SERVICES].db.close()
