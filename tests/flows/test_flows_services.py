"""The flows domain on the services alone (``core.services.build_services``), without a web
application: what ``core.flows.install`` adds, and flows created, run, triggered and polled through
its services."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from patchbay.core.errors import Invalid, NotFound
from patchbay.core.flows import engine, executions, service, templates, triggers
from patchbay.core.flows.models import FlowExecution, FlowTemplate
from patchbay.core.flows.testing import drain
from patchbay.core.services import build_services
from patchbay.core.testing import create_workspace_with_key


@pytest.fixture
async def services(make_settings):
    services = build_services(make_settings())
    async with services.running(migrate=False):
        yield services


async def test_install_adds_the_runner_the_jobs_the_listener_and_seeds_the_system_templates(services):
    assert services.flow_runner is not None and services.flow_runner.services is services
    assert engine.JOB_KIND in services.jobs.kinds
    assert {"poll-triggers", "run-schedules"} <= set(services.cron.jobs)
    assert len(services.webhook_listeners) == 1
    async with services.db.session() as session:
        seeded = set((await session.scalars(select(FlowTemplate.slug).where(FlowTemplate.is_system.is_(True)))).all())
    assert {t["slug"] for t in templates.system_templates(services.registry)} == seeded and seeded


async def test_a_flow_runs_and_is_replayed_through_the_services(services):
    workspace_id = (await create_workspace_with_key(services))["workspace_id"]
    steps = [{"id": "shape", "type": "transform", "output": {"name": "{{ trigger.name | upper }}"}}]
    flow, problems = await service.create_flow(services, workspace_id=workspace_id, body={"name": "Standalone", "steps": steps})
    assert problems == []
    execution, records = await service.run_flow_now(services, workspace_id=workspace_id, flow_id=flow.id, payload={"name": "ada"})
    assert execution.status == "completed" and [r.output for r in records] == [{"name": "ADA"}]

    await service.publish_flow(services, workspace_id=workspace_id, flow_id=flow.id)
    replayed = await executions.replay(services, workspace_id=workspace_id, flow_id=flow.id, execution_id=execution.id)
    assert replayed.status == "pending" and replayed.version == 1
    assert await drain(services, kinds=(engine.JOB_KIND,)) == 1
    async with services.db.session() as session:
        assert (await session.get(FlowExecution, replayed.id)).status == "completed"


async def test_the_services_refuse_with_domain_errors(services):
    workspace_id = (await create_workspace_with_key(services))["workspace_id"]
    with pytest.raises(Invalid, match=r"steps\[0\]\.type 'nope' is not a known step type"):
        await service.create_flow(services, workspace_id=workspace_id, body={"name": "Bad", "steps": [{"id": "a", "type": "nope"}]})
    with pytest.raises(NotFound, match="Flow not found"):
        await service.publish_flow(services, workspace_id=workspace_id, flow_id="missing")
    with pytest.raises(NotFound, match="Provider not found: nowhere"):
        await triggers.subscribe(services, workspace_id=workspace_id, flow_id="missing", body={"providerType": "nowhere", "triggerName": "x"})
    flow, _ = await service.create_flow(services, workspace_id=workspace_id, body={"name": "Draft"})
    with pytest.raises(Invalid, match="publish it first"):
        await service.toggle_flow(services, workspace_id=workspace_id, flow_id=flow.id, active=None)
