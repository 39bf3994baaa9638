"""The home page: per workspace, what needs attention, counted by the services that own the rows,
and never another workspace's."""

from __future__ import annotations

from datetime import timedelta

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.connections.models import Connection
from patchbay.core.flows.models import Flow, FlowExecution
from patchbay.core.jobs.models import Job
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks.models import WebhookDelivery
from tests.console.test_console_settings import GatedPack, _gate_crm, _pending

pytestmark = pytest.mark.both_databases  # the counts are SQL aggregates: SQLite and PostgreSQL


@pytest.fixture
def console_plugins():  # the settings tests' provider, for a pending approval
    return [GatedPack()]


@pytest.fixture
def console_settings(database_url):
    return {"database_url": database_url}


async def _trouble(app, workspace_id: str) -> None:
    """Two failing connections, one healthy; a failed and a retrying delivery, a delivered one;
    a failed execution of today, one of two days ago, a completed one; two queued jobs."""
    now = utcnow()
    async with app[SERVICES].db.transaction(tenant=workspace_id) as db:
        db.add_all(
            [
                Connection(provider="gatedcrm", status="invalid", credentials="x", refresh_error="invalid_grant: token revoked"),
                Connection(provider="gatedcrm", status="expired", credentials="x"),
                Connection(provider="gatedcrm", status="connected", credentials="x"),
                WebhookDelivery(event_id="e1", subscription_id="s1", status="failed", attempts=5, last_status_code=500, last_error="500 from receiver"),
                WebhookDelivery(event_id="e2", subscription_id="s1", status="pending", attempts=2, last_error="timeout"),
                WebhookDelivery(event_id="e3", subscription_id="s1", status="succeeded", attempts=1),
            ]
        )
        flow = Flow(name="Sync leads")
        db.add(flow)
        await db.flush()
        db.add_all(
            [
                FlowExecution(flow_id=flow.id, status="failed", trigger_source="test", error="step send: 422 Unprocessable"),
                FlowExecution(flow_id=flow.id, status="failed", trigger_source="test", error="old", created_at=now - timedelta(days=2)),
                FlowExecution(flow_id=flow.id, status="completed", trigger_source="test"),
            ]
        )
    async with app[SERVICES].db.transaction() as db:
        db.add_all(
            [
                Job(kind="webhooks.deliver", workspace_id=workspace_id, run_at=now - timedelta(minutes=7)),
                Job(kind="webhooks.deliver", workspace_id=workspace_id, run_at=now - timedelta(seconds=5)),
                Job(kind="webhooks.deliver", workspace_id=workspace_id, run_at=now + timedelta(hours=1)),  # not due yet
            ]
        )


async def test_home_lists_what_needs_attention(make_person, sign_in, console_server):
    admin = await make_person("admin")
    manager = await make_person("manager", admin.workspace_id)
    other = await make_person("admin")
    await _trouble(console_server.app, admin.workspace_id)
    await _trouble(console_server.app, other.workspace_id)
    await _gate_crm(console_server.app, admin.workspace_id)
    await _pending(console_server.app, admin.workspace_id, manager.user_id)
    http = await sign_in(admin)
    async with http.get(http.landed) as response:
        page = await response.text()
    assert response.status == 200
    cards = page.split('class="cards"', 1)[1].split("</ul>", 1)[0]
    assert '<span class="stat">2</span> connections failing refresh' in cards
    assert '<span class="stat">2</span> deliveries failing' in cards
    assert '<span class="stat">1</span> execution failed in the last 24 h' in cards
    assert '<span class="stat">2</span> jobs waiting, the oldest for 7 min' in cards
    assert '<span class="stat">1</span> approval waiting' in cards
    assert "invalid_grant: token revoked" in page and "500 from receiver" in page and "step send: 422 Unprocessable" in page
    assert ">old<" not in page


async def test_a_quiet_workspace_says_so(make_person, sign_in):
    http = await sign_in(await make_person("viewer"))
    async with http.get(http.landed) as response:
        page = await response.text()
    assert "Nothing needs attention" in page
