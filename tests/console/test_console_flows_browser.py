"""Chromium walks the flows pages: from the nav to a flow's steps, a diff of its versions, its
executions filtered to the failed ones, the failed execution with the failing step's error and
input (a local server answered 500), and its replay; screenshots of every page, axe-core on each."""

from __future__ import annotations

import re

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows import service as flows
from tests.console.conftest import assert_accessible, shot


async def test_a_failed_execution_is_found_read_and_replayed(browser, make_person, console_server, failing_flow):
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    flow_id, execution_id = await failing_flow(manager.workspace_id)
    await flows.update_flow(services, workspace_id=manager.workspace_id, flow_id=flow_id, body={"name": "Notify CRM"})
    page = await browser.sign_in(manager)
    page.on("dialog", lambda dialog: dialog.accept())

    await page.get_by_role("link", name="Flows", exact=True).click()
    await page.wait_for_url(re.compile(r"/flows$"))
    await shot(page, "flows")
    await assert_accessible(page)

    await page.get_by_role("link", name="Notify CRM").click()
    await page.wait_for_url(re.compile(rf"/flows/{flow_id}$"))
    assert await page.get_by_role("heading", name=re.compile("notify")).count() == 1
    await shot(page, "flow")
    await assert_accessible(page)

    await page.get_by_role("button", name="Show the difference").click()
    await page.wait_for_url(re.compile(r"/diff\?"))
    await shot(page, "flow-diff")
    await assert_accessible(page)

    await page.goto(f"{browser.base}/console/w/{manager.workspace_id}/flows/{flow_id}")
    await page.get_by_role("link", name="Executions").click()
    await page.get_by_label("Status").select_option("failed")
    await page.get_by_label("Started").select_option("24h")
    await page.get_by_role("button", name="Filter").click()
    await page.wait_for_url(re.compile(r"status=failed"))
    await shot(page, "flow-executions")
    await assert_accessible(page)

    await page.get_by_role("link", name=execution_id).click()
    await page.wait_for_url(re.compile(rf"/executions/{execution_id}$"))
    failing = page.locator("li.step-failed")
    assert "HTTP 500" in await failing.locator(".error").inner_text()
    assert '"who": "ada"' in await failing.locator("pre.json").first.inner_text(), "the failing step's rendered input"
    await shot(page, "flow-execution-failed")
    await assert_accessible(page)

    await page.get_by_role("button", name="Replay with the original payload").click()
    await page.wait_for_url(lambda url: "/executions/" in url and not url.endswith(execution_id))
    assert await page.get_by_text("replay of").count() + await page.get_by_text(execution_id).count() >= 1
    await shot(page, "flow-execution-replay")
    await assert_accessible(page)

    phone = await browser.new_page(width=375, height=740, color_scheme="dark")
    await browser.sign_in(manager, phone)
    await phone.goto(f"{browser.base}/console/w/{manager.workspace_id}/flows/{flow_id}/executions/{execution_id}")
    assert await phone.evaluate("document.documentElement.scrollWidth") <= 375
    await shot(phone, "flow-execution-phone-dark")
    await assert_accessible(phone)
