"""Pytest fixtures of the Meta pack's webhook and lead tests (imported by their ``conftest.py``): a
fake Graph API, recording receivers, an app whose ``facebook`` provider points at the fake and whose retries
wait milliseconds, and polling helpers."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select

from patchbay.core.appkeys import SERVICES
from patchbay.core.settings import WebhooksSettings
from patchbay.core.webhooks.models import WebhookEvent
from patchbay.providers.meta.testing import FakeGraph
from patchbay.testing import Receiver, create_workspace_with_key

APP_SECRET = "meta-app-secret"
VERIFY_TOKEN = "verify-me"


@pytest.fixture
async def graph():
    server = await FakeGraph().start()
    yield server
    await server.close()


@pytest.fixture
async def receivers():
    started: list[Receiver] = []

    async def make(statuses=None, headers_for=None) -> Receiver:
        receiver = await Receiver(statuses, headers_for).start()
        started.append(receiver)
        return receiver

    yield make
    for receiver in started:
        await receiver.close()


@pytest.fixture
def fast_webhooks():
    return WebhooksSettings(retry_base_ms=20, retry_cap_ms=60, long_tail_schedule=["0.05", "0.05"])


@pytest.fixture
def wh_app(make_app, graph, fast_webhooks):
    """``wh_app(background=True, **overrides)``: the app with ``facebook`` pointed at the fake."""

    def make(*, background: bool = True, plugins=(), providers=None, **overrides):
        providers = {"facebook": {"api_base_url": graph.url, "webhook_secret": APP_SECRET, "webhook_verify_token": VERIFY_TOKEN}, **(providers or {})}
        overrides.setdefault("webhooks", fast_webhooks)
        return make_app(plugins=plugins, background=background, providers=providers, **overrides)

    return make


@pytest.fixture
async def wh(aiohttp_client, wh_app):
    """A client of the app (workers running) and two workspaces."""
    client = await aiohttp_client(wh_app())
    app = client.server.app
    first = await create_workspace_with_key(app, name="First")
    second = await create_workspace_with_key(app, name="Second")
    return client, app, first, second


async def wait_until(predicate, timeout: float = 10.0, every: float = 0.05):
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(every)


async def event_rows(app):
    async with app[SERVICES].db.session() as session:
        return list((await session.scalars(select(WebhookEvent).order_by(WebhookEvent.created_at))).all())


async def count(app, model) -> int:
    async with app[SERVICES].db.session() as session:
        return await session.scalar(select(func.count()).select_from(model))


@pytest.fixture
def helpers():
    class Helpers:
        pass

    h = Helpers()
    h.wait_until = wait_until
    h.event_rows = event_rows
    h.count = count
    return h
