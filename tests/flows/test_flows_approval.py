"""The ``approval`` step: the execution waits in the database until an approver answers (by a
signed link emailed to the approvers, or through the API) or the approval times out, then takes
the path of that answer."""

from __future__ import annotations

import re
import socket
from datetime import timedelta
from email import message_from_bytes
from urllib.parse import parse_qs, urlsplit

import pytest
from aiosmtpd.controller import Controller
from sqlalchemy import update

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.engine import JOB_KIND, create_executions
from patchbay.core.flows.models import FlowApproval, FlowExecution
from patchbay.core.jobs.models import Job
from patchbay.core.settings import SmtpSettings
from patchbay.core.testing import create_workspace_with_key
from patchbay.core.timeutil import utcnow

API = "/connect/v1"


class _Mailbox:
    def __init__(self) -> None:
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append((envelope.rcpt_tos, message_from_bytes(envelope.content)))
        return "250 OK"


@pytest.fixture
def smtp():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mailbox = _Mailbox()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield port, mailbox
    controller.stop()


def _flow_steps(**approval) -> list[dict]:
    return [
        {
            "id": "ask",
            "type": "approval",
            "message": "Refund {{ trigger.amount }}?",
            "expiresInSeconds": 3600,
            "approved": [{"id": "yes", "type": "transform", "output": "refunded"}],
            "denied": [{"id": "no", "type": "transform", "output": "refused"}],
            "timeout": [{"id": "late", "type": "transform", "output": "escalated"}],
            **approval,
        },
        {"id": "after", "type": "transform", "output": "{{ steps.ask.output.decision }}"},
    ]


async def _start(client, app, ws, steps, drain_jobs) -> tuple[str, str]:
    h = ws["headers"]
    flow = await (await client.post(f"{API}/flows", json={"name": "refunds", "steps": steps}, headers=h)).json()
    response = await client.post(f"{API}/flows/{flow['id']}/publish", headers=h)
    assert response.status == 201, await response.text()
    async with app[SERVICES].db.transaction() as session:
        (execution_id,) = await create_executions(
            app[SERVICES],
            session,
            [{"workspace_id": ws["workspace_id"], "flow_id": flow["id"], "version": 1, "trigger_source": "webhook", "trigger_payload": {"amount": 40}}],
        )
    await drain_jobs(app[SERVICES])
    return flow["id"], execution_id


async def _execution(client, h, flow_id, execution_id) -> dict:
    return await (await client.get(f"{API}/flows/{flow_id}/executions/{execution_id}", headers=h)).json()


def _paths(execution) -> dict[str, str]:
    return {step["stepId"]: step["status"] for step in execution["steps"]}


@pytest.mark.both_databases
async def test_an_approval_answered_by_signed_link_and_a_tampered_link_refused(aiohttp_client, make_app, database_url, drain_jobs, smtp):
    port, mailbox = smtp
    client = await aiohttp_client(make_app(database_url=database_url, smtp=SmtpSettings(host="127.0.0.1", port=port)))
    app = client.server.app
    ws = await create_workspace_with_key(app)
    h = ws["headers"]
    flow_id, execution_id = await _start(client, app, ws, _flow_steps(approvers=["boss@example.com"]), drain_jobs)
    waiting = await _execution(client, h, flow_id, execution_id)
    assert waiting["status"] == "waiting" and waiting["resumeAt"] is not None
    (pending,) = (await (await client.get(f"{API}/flows/approvals?status=pending", headers=h)).json())["data"]
    assert pending["executionId"] == execution_id and pending["message"] == "Refund 40?" and pending["stepId"] == "ask"

    ((to, message),) = mailbox.messages
    assert to == ["boss@example.com"]
    text = message.get_payload(decode=True).decode()
    approve = re.search(r"Approve: (\S+)", text).group(1)
    deny = re.search(r"Deny: (\S+)", text).group(1)
    approve_token = parse_qs(urlsplit(approve).query)["token"][0]
    deny_token = parse_qs(urlsplit(deny).query)["token"][0]
    assert urlsplit(approve).path == f"{API}/flows/approvals/decide"

    # tampered: the deny link's decision changed to approve, or the approve link's signature changed
    forged = deny_token.replace(".denied.", ".approved.")
    for token in (forged, approve_token[:-2] + ("AA" if not approve_token.endswith("AA") else "BB"), "x.approved.1.y"):
        response = await client.post(f"{API}/flows/approvals/decide", json={"token": token})
        assert response.status == 403, await response.text()
        assert (await client.get(f"{API}/flows/approvals/decide", params={"token": token})).status == 403
    assert (await _execution(client, h, flow_id, execution_id))["status"] == "waiting"

    page = await client.get(urlsplit(approve).path, params={"token": approve_token})
    assert page.status == 200 and "<form method=post>" in await page.text()
    assert (await _execution(client, h, flow_id, execution_id))["status"] == "waiting"  # opening the link changes nothing
    response = await client.post(f"{API}/flows/approvals/decide", data={"token": approve_token})
    assert response.status == 201, await response.text()
    assert (await response.json())["status"] == "approved"
    await drain_jobs(app[SERVICES])
    done = await _execution(client, h, flow_id, execution_id)
    assert done["status"] == "completed", done["error"]
    assert _paths(done) == {"ask": "completed", "yes": "completed", "no": "skipped", "late": "skipped", "after": "completed"}
    assert done["steps"][-1]["output"] == "approved"
    # answered once: the deny link, or the approve link again, is too late
    assert (await client.post(f"{API}/flows/approvals/decide", json={"token": deny_token})).status == 409


@pytest.mark.both_databases
async def test_an_unanswered_approval_times_out_to_its_timeout_path(flows_client, flows_ws, drain_jobs):
    client, app, h = flows_client, flows_client.server.app, flows_ws["headers"]
    flow_id, execution_id = await _start(client, app, flows_ws, _flow_steps(), drain_jobs)
    assert (await _execution(client, h, flow_id, execution_id))["status"] == "waiting"
    # the hour passes: make that now rather than wait (the approval, the execution and its due job)
    past = utcnow() - timedelta(seconds=1)
    async with app[SERVICES].db.transaction() as session:
        await session.execute(update(FlowApproval).values(expires_at=past))
        await session.execute(update(FlowExecution).where(FlowExecution.id == execution_id).values(resume_at=past))
        await session.execute(update(Job).where(Job.kind == JOB_KIND, Job.status == "queued").values(run_at=past))
    await drain_jobs(app[SERVICES])
    done = await _execution(client, h, flow_id, execution_id)
    assert done["status"] == "completed", done["error"]
    assert _paths(done) == {"ask": "completed", "yes": "skipped", "no": "skipped", "late": "completed", "after": "completed"}
    assert done["steps"][-1]["output"] == "timeout"
    (approval,) = (await (await client.get(f"{API}/flows/approvals", headers=h)).json())["data"]
    assert approval["status"] == "timeout"
    response = await client.post(f"{API}/flows/approvals/{approval['id']}/decision", json={"decision": "approved"}, headers=h)
    assert response.status == 409


@pytest.mark.both_databases
async def test_an_approver_denies_through_the_api_and_the_early_wake_job_is_harmless(flows_client, flows_ws, drain_jobs):
    client, app, h = flows_client, flows_client.server.app, flows_ws["headers"]
    flow_id, execution_id = await _start(client, app, flows_ws, _flow_steps(), drain_jobs)
    (approval,) = (await (await client.get(f"{API}/flows/approvals?status=pending", headers=h)).json())["data"]
    response = await client.post(f"{API}/flows/approvals/{approval['id']}/decision", json={"decision": "maybe"}, headers=h)
    assert response.status == 400
    response = await client.post(f"{API}/flows/approvals/{approval['id']}/decision", json={"decision": "denied", "note": "no"}, headers=h)
    assert response.status == 201 and (await response.json())["status"] == "denied"
    await drain_jobs(app[SERVICES])
    done = await _execution(client, h, flow_id, execution_id)
    assert done["status"] == "completed"
    assert _paths(done) == {"ask": "completed", "yes": "skipped", "no": "completed", "late": "skipped", "after": "completed"}
