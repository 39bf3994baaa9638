"""Flow approvals in the console: the page lists what the workspace's executions wait for; an
approver approves or denies there (the API's service: the execution resumes at once on that path);
a viewer, a manager who is no approver, a form without its CSRF token, another workspace's approval
a second answer and an answer past the expiry are refused over HTTP with the approval unchanged;
the home page counts them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows import service as flows
from patchbay.core.flows.engine import JOB_KIND, create_executions
from patchbay.core.flows.models import FlowApproval, FlowExecution, FlowExecutionStep
from patchbay.core.flows.testing import drain
from patchbay.core.timeutil import utcnow
from tests.console.conftest import console_get, console_post, csrf_of

pytestmark = pytest.mark.both_databases


@pytest.fixture
def console_settings(database_url):
    return {"database_url": database_url}


STEPS = [
    {
        "id": "ask",
        "name": "Refund check",
        "type": "approval",
        "message": "Refund {{ trigger.amount }} EUR?",
        "approvers": ["boss@example.com"],
        "expiresInSeconds": 3600,
        "approved": [{"id": "yes", "type": "transform", "output": "refunded"}],
        "denied": [{"id": "no", "type": "transform", "output": "refused"}],
        "timeout": [{"id": "late", "type": "transform", "output": "escalated"}],
    },
    {"id": "after", "type": "transform", "output": "{{ steps.ask.output.decision }}"},
]


async def waiting_approval(services, workspace_id: str, name: str = "Refunds") -> tuple[str, str, str]:
    """A published flow with an approval step and one execution waiting on it: (flow, execution,
    approval) ids."""
    flow, _ = await flows.create_flow(services, workspace_id=workspace_id, body={"name": name, "steps": STEPS})
    await flows.publish_flow(services, workspace_id=workspace_id, flow_id=flow.id)
    async with services.db.transaction() as session:
        (execution_id,) = await create_executions(
            services,
            session,
            [{"workspace_id": workspace_id, "flow_id": flow.id, "version": 1, "trigger_source": "webhook", "trigger_payload": {"amount": 40}}],
        )
    await run_due(services)
    async with services.db.session() as db:
        execution = await db.get(FlowExecution, execution_id)
        approval = await db.scalar(select(FlowApproval).where(FlowApproval.execution_id == execution_id))
    assert execution.status == "waiting"
    return flow.id, execution_id, approval.id


async def run_due(services) -> int:
    """Run the executions due now (the approval emails are not this test's: no SMTP)."""
    return await drain(services, kinds=(JOB_KIND,))


async def _state(services, execution_id: str, approval_id: str) -> tuple[str, str, dict[str, str]]:
    async with services.db.session() as db:
        execution = await db.get(FlowExecution, execution_id)
        approval = await db.get(FlowApproval, approval_id)
        steps = (await db.scalars(select(FlowExecutionStep).where(FlowExecutionStep.execution_id == execution_id))).all()
    return execution.status, approval.status, {row.step_id: row.status for row in steps}


async def test_an_approver_approves_in_the_console_and_the_execution_takes_the_approved_path(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    admin = await make_person("admin")
    flow_id, execution_id, approval_id = await waiting_approval(services, admin.workspace_id)
    http = await sign_in(admin)
    base = f"/console/w/{admin.workspace_id}/flows"

    status, page = await console_get(http, base)
    assert status == 200 and f'href="{base}/approvals"' in page
    status, page = await console_get(http, f"{base}/approvals")
    assert status == 200
    for shown in ("Refunds", "Refund check", "Refund 40 EUR?", execution_id, "ask", "boss@example.com", "admin role", "Approve", "Deny"):
        assert shown in page, shown
    status, page = await console_get(http, f"{base}/{flow_id}/executions/{execution_id}")
    assert status == 200 and "Waiting for an approval" in page and f"{base}/approvals/{approval_id}/approve" in page

    status, _, location = await console_post(
        http, f"{base}/approvals/{approval_id}/approve", {"note": "fine", "back": "execution"}, token_from=f"{base}/approvals"
    )
    assert status == 303 and location == f"{base}/{flow_id}/executions/{execution_id}"
    assert await run_due(services) >= 1  # woken now, not at the expiry an hour away
    execution_status, approval_status, steps = await _state(services, execution_id, approval_id)
    assert (execution_status, approval_status) == ("completed", "approved")
    assert steps == {"ask": "completed", "yes": "completed", "no": "skipped", "late": "skipped", "after": "completed"}
    async with services.db.session() as db:
        approval = await db.get(FlowApproval, approval_id)
    assert approval.decided_by == admin.user_id and approval.note == "fine"

    status, page = await console_get(http, f"{base}/approvals")
    assert status == 200 and "No execution is waiting for an approval" in page and "Recently answered" in page and "approved" in page
    status, page = await console_get(http, f"{base}/{flow_id}/executions/{execution_id}")
    assert status == 200 and "Waiting for an approval" not in page


async def test_deny_takes_the_denied_path_and_a_second_answer_is_a_409_page(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    admin = await make_person("admin")
    _, execution_id, approval_id = await waiting_approval(services, admin.workspace_id)
    http = await sign_in(admin)
    base = f"/console/w/{admin.workspace_id}/flows/approvals"
    status, _, location = await console_post(http, f"{base}/{approval_id}/deny", {}, token_from=base)
    assert status == 303 and location == base
    await run_due(services)
    execution_status, approval_status, steps = await _state(services, execution_id, approval_id)
    assert (execution_status, approval_status) == ("completed", "denied")
    assert steps == {"ask": "completed", "yes": "skipped", "no": "completed", "late": "skipped", "after": "completed"}

    for verb in ("approve", "deny"):
        status, page, _ = await console_post(http, f"{base}/{approval_id}/{verb}", {}, token_from=base)
        assert status == 409 and "already denied" in page and 'role="alert"' in page
    assert (await _state(services, execution_id, approval_id))[1] == "denied"


async def test_a_viewer_a_manager_who_is_no_approver_and_a_form_without_csrf_are_refused(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    admin = await make_person("admin")
    viewer = await make_person("viewer", admin.workspace_id)
    manager = await make_person("manager", admin.workspace_id)  # the default policy: admins approve
    _, execution_id, approval_id = await waiting_approval(services, admin.workspace_id)
    base = f"/console/w/{admin.workspace_id}/flows/approvals"

    for person in (viewer, manager):
        http = await sign_in(person)
        status, page = await console_get(http, base)
        assert status == 200 and "Refund 40 EUR?" in page and f"{approval_id}/approve" not in page and "Only an approver" in page
        for verb in ("approve", "deny"):
            status, _, _ = await console_post(http, f"{base}/{approval_id}/{verb}", {}, token_from=base)
            assert status == 403, person.role
    http = await sign_in(admin)
    for form in ({}, {"csrf": "forged"}):
        status, page, _ = await console_post(http, f"{base}/{approval_id}/approve", form)
        assert status == 403 and "reload the page" in page
    assert await run_due(services) == 0
    assert (await _state(services, execution_id, approval_id))[:2] == ("waiting", "pending")


async def test_another_workspaces_approval_is_not_found_and_unchanged(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    admin = await make_person("admin")
    other = await make_person("admin")
    _, execution_id, approval_id = await waiting_approval(services, other.workspace_id, name="Their refunds")
    http = await sign_in(admin)
    base = f"/console/w/{admin.workspace_id}/flows/approvals"
    status, page = await console_get(http, base)
    assert status == 200 and "Their refunds" not in page and approval_id not in page
    for verb in ("approve", "deny"):
        status, page, _ = await console_post(http, f"{base}/{approval_id}/{verb}", {}, token_from=base)
        assert status == 404 and "Approval not found" in page
    # nor through the other workspace's URL, which is not the person's
    status, _, _ = await console_post(http, f"/console/w/{other.workspace_id}/flows/approvals/{approval_id}/approve", {}, token_from=base)
    assert status == 404
    assert (await _state(services, execution_id, approval_id))[:2] == ("waiting", "pending")


async def test_the_home_page_counts_flow_approvals_waiting(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    admin = await make_person("admin")
    other = await make_person("admin")
    await waiting_approval(services, admin.workspace_id)
    await waiting_approval(services, admin.workspace_id, name="Credits")
    await waiting_approval(services, other.workspace_id, name="Their refunds")
    http = await sign_in(admin)
    status, page = await console_get(http, f"/console/w/{admin.workspace_id}/")
    assert status == 200
    cards = page.split('class="cards"', 1)[1].split("</ul>", 1)[0]
    assert '<span class="stat">2</span> approvals waiting' in cards
    assert f'href="/console/w/{admin.workspace_id}/flows/approvals">2 in flows</a>' in cards
    assert "Flow approvals waiting" in page and "Credits" in page and "Their refunds" not in page
    assert "Nothing needs attention" not in page


async def test_an_expired_approval_offers_no_answer_and_refuses_one_with_a_409_page(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    admin = await make_person("admin")
    _, execution_id, approval_id = await waiting_approval(services, admin.workspace_id)
    async with services.db.transaction() as db:  # the hour has passed; the execution has not woken yet
        await db.execute(update(FlowApproval).where(FlowApproval.id == approval_id).values(expires_at=utcnow() - timedelta(seconds=1)))
    http = await sign_in(admin)
    base = f"/console/w/{admin.workspace_id}/flows/approvals"
    status, page = await console_get(http, base)
    assert status == 200 and "Expired unanswered" in page and f"{approval_id}/approve" not in page
    csrf = csrf_of(page)
    status, page, _ = await console_post(http, f"{base}/{approval_id}/approve", {"csrf": csrf})
    assert status == 409 and "timed out" in page
    assert (await _state(services, execution_id, approval_id))[:2] == ("waiting", "pending")
