"""Leads of one processing pass are read in chunks per connection (``WebhookHandler.fetch_leads``):
the Meta pack reads up to 50 of them in one Graph API call (``GET /?ids=``), so a burst of leadgen
events costs a few provider calls (and a few hits of the connection's proxy rate limit), not one
each; a lead the Graph API cannot read fails its own event only."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.jobs.queue import JobContext
from patchbay.core.leads.models import Lead
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.webhooks.models import WebhookEvent
from patchbay.core.webhooks.processing import process_job
from patchbay.providers.meta.testing import leadgen_payload, meta_signature
from patchbay.testing import add_connection

APP_SECRET = "meta-app-secret"


async def _page_with_events(wh_app, aiohttp_client, graph, lead_ids: list[str], *, readable=lambda lead_id: True):
    """An app without workers, a workspace with a page connection, and one stored leadgen event
    per id (the fake Graph API serves the readable ones); answers the app and the event ids."""
    client = await aiohttp_client(wh_app(background=False))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    await add_connection(app, ws["workspace_id"], "facebook", meta={"page_id": "page-A"}, credentials={"access_token": "page-token"})
    event_ids = []
    for lead_id in lead_ids:
        if readable(lead_id):
            graph.add_lead(lead_id, email=f"{lead_id}@example.com", phone=f"+1555{len(event_ids):07d}")
        body = json.dumps(leadgen_payload("page-A", lead_id)).encode()
        response = await client.post("/webhook/facebook", data=body, headers={"x-hub-signature-256": meta_signature(APP_SECRET, body)})
        assert response.status == 200
        event_ids.append((await response.json())["id"])
    return app, event_ids


async def _process(app, event_ids: list[str]) -> dict[str, WebhookEvent]:
    await process_job(JobContext(app[SERVICES], "job", "webhooks.process", {"event_ids": event_ids}, 1, 10, None))
    async with app[SERVICES].db.session() as session:
        return {row.id: row for row in (await session.scalars(select(WebhookEvent))).all()}


def _graph_calls(graph) -> tuple[list[int], int]:
    """The sizes of the ``?ids=`` calls the fake Graph API answered, largest first (the chunks are
    read concurrently: their order of arrival is not fixed), and the count of single reads."""
    batches = sorted((len(query["ids"].split(",")) for method, path, query, _ in graph.requests if path == "/" and "ids" in query), reverse=True)
    singles = sum(1 for method, path, query, _ in graph.requests if path.startswith("/lead-"))
    return batches, singles


async def test_a_burst_of_leadgen_events_is_read_fifty_leads_per_graph_call(wh_app, aiohttp_client, graph):
    lead_ids = [f"lead-{n}" for n in range(120)]
    app, event_ids = await _page_with_events(wh_app, aiohttp_client, graph, lead_ids)
    events = await _process(app, event_ids)
    assert _graph_calls(graph) == ([50, 50, 20], 0)
    assert {events[event_id].status for event_id in event_ids} == {"PROCESSED"}
    async with app[SERVICES].db.session() as session:
        leads = {lead.external_id: lead for lead in (await session.scalars(select(Lead))).all()}
    assert sorted(leads) == sorted(lead_ids)
    assert all(events[event_id].lead_id == leads[lead_id].id for event_id, lead_id in zip(event_ids, lead_ids, strict=True))
    assert all(call[3] == "Bearer page-token" for call in graph.requests)  # through the page's connection


@pytest.mark.slow  # about 6 s (setup and call)
async def test_an_unreadable_lead_fails_its_own_event_and_the_others_are_read_one_by_one(wh_app, aiohttp_client, graph):
    lead_ids = [f"lead-{n}" for n in range(5)]
    app, event_ids = await _page_with_events(wh_app, aiohttp_client, graph, lead_ids, readable=lambda lead_id: lead_id != "lead-3")
    events = await _process(app, event_ids)
    assert _graph_calls(graph) == ([5], 5)  # the Graph API refused the whole call: one read per lead
    statuses = [events[event_id].status for event_id in event_ids]
    assert statuses == ["PROCESSED", "PROCESSED", "PROCESSED", "FAILED", "PROCESSED"]
    assert "lead extraction failed" in events[event_ids[3]].reason and "404" in events[event_ids[3]].reason
    async with app[SERVICES].db.session() as session:
        stored = sorted((await session.scalars(select(Lead.external_id))).all())
    assert stored == ["lead-0", "lead-1", "lead-2", "lead-4"]
