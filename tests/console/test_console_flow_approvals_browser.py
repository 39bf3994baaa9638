"""A Chromium walk: an admin finds a flow's approval from the home page and approves it on the
execution's page; the execution goes on, on its approved path."""

from __future__ import annotations

import re

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.models import FlowApproval, FlowExecution
from tests.console.conftest import assert_accessible, shot
from tests.console.test_console_flow_approvals import run_due, waiting_approval


async def test_a_flow_approval_is_found_from_home_and_approved_on_the_execution_page(browser, make_person, console_server):
    services = console_server.app[SERVICES]
    admin = await make_person("admin")
    flow_id, execution_id, approval_id = await waiting_approval(services, admin.workspace_id)
    page = await browser.sign_in(admin)
    await page.get_by_role("link", name="1 in flows").click()
    await page.wait_for_url(re.compile(r"/flows/approvals$"))
    assert await page.get_by_text("Refund 40 EUR?").is_visible()
    await page.get_by_role("link", name=execution_id).click()
    await page.wait_for_url(re.compile(f"/executions/{execution_id}$"))
    await page.get_by_label("Note").fill("checked the order")
    await shot(page, "flow-execution-approval")
    await assert_accessible(page)
    await page.get_by_role("button", name="Approve ask of Refunds").click()
    await page.wait_for_url(re.compile(f"/executions/{execution_id}$"))
    assert await page.get_by_role("heading", name="Waiting for an approval").count() == 0
    await run_due(services)
    await page.reload()
    assert "completed" in await page.locator("dl.facts").text_content()
    async with services.db.session() as db:
        approval = await db.get(FlowApproval, approval_id)
        execution = await db.get(FlowExecution, execution_id)
    assert (approval.status, approval.note, execution.status) == ("approved", "checked the order", "completed")
