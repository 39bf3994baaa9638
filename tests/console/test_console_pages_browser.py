"""Chromium walks of the console's pages: an API key made and revoked, a pending connection
approved, and every page screenshotted (desktop, and phone width in dark mode) and checked with
axe-core."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.approvals.models import ApprovalRequest
from patchbay.core.security.models import ApiKey
from tests.console.conftest import assert_accessible, shot
from tests.console.test_console_flow_approvals import waiting_approval
from tests.console.test_console_home import _trouble
from tests.console.test_console_settings import GatedPack, _gate_crm, _pending


@pytest.fixture
def console_plugins():
    return [GatedPack()]


async def test_an_api_key_is_made_and_revoked_in_the_browser(browser, make_person, console_server):
    admin = await make_person("admin")
    page = await browser.sign_in(admin)
    page.on("dialog", lambda dialog: dialog.accept())
    await page.get_by_role("link", name="Settings").click()
    await page.wait_for_url(re.compile(r"/settings/keys$"))
    await page.get_by_label("Name").fill("deploy bot")
    await page.get_by_label("Access").select_option("read")
    await page.get_by_role("button", name="Make key").click()
    secret = (await page.locator("#new-key").text_content()).strip()
    assert secret.startswith("pb_") and await page.get_by_role("status").filter(has_text="not shown again").is_visible()
    await shot(page, "settings-keys-made")
    await assert_accessible(page)
    await page.get_by_role("button", name="Revoke deploy bot").click()
    await page.wait_for_url(re.compile(r"/settings/keys$"))
    assert secret not in await page.content()
    row = page.get_by_role("row").filter(has_text="deploy bot")
    assert "revoked" in await row.text_content()
    await shot(page, "settings-keys-revoked")
    async with console_server.app[SERVICES].db.session() as db:
        key = await db.scalar(select(ApiKey).where(ApiKey.name == "deploy bot"))
    assert key.revoked_at is not None


async def test_a_pending_connection_is_approved_in_the_browser(browser, make_person, console_server):
    admin = await make_person("admin")
    manager = await make_person("manager", admin.workspace_id)
    await _gate_crm(console_server.app, admin.workspace_id)
    request_id = await _pending(console_server.app, admin.workspace_id, manager.user_id)
    page = await browser.sign_in(admin)
    await page.get_by_role("link", name="gatedcrm").click()  # from the home's "Approvals waiting"
    await page.wait_for_url(re.compile(r"/settings/approvals$"))
    await shot(page, "settings-approvals-pending")
    await assert_accessible(page)
    await page.get_by_label("Note").fill("vetted")
    await page.get_by_role("button", name="Approve gatedcrm").click()
    await page.wait_for_url(re.compile(r"/settings/approvals$"))
    assert await page.get_by_text("Nothing is waiting for approval").is_visible()
    await shot(page, "settings-approvals-decided")
    async with console_server.app[SERVICES].db.session() as db:
        row = await db.get(ApprovalRequest, request_id)
    assert row.status == "approved" and row.connection_id and row.decision_note == "vetted"


async def test_every_page_is_screenshotted_and_accessible(browser, make_person, console_server):
    admin = await make_person("admin")
    manager = await make_person("manager", admin.workspace_id)
    await make_person("", admin.workspace_id, operator=True, email="operator@example.com")
    flow_id, execution_id, _ = await waiting_approval(console_server.app[SERVICES], admin.workspace_id)  # first: it runs the due jobs
    await _trouble(console_server.app, admin.workspace_id)
    await _gate_crm(console_server.app, admin.workspace_id)
    await _pending(console_server.app, admin.workspace_id, manager.user_id)
    desktop = await browser.sign_in(admin)
    phone = await browser.sign_in(admin, await browser.new_page(width=375, height=740, color_scheme="dark"))
    base = f"{browser.base}/console/w/{admin.workspace_id}"
    pages = {
        "home-attention": f"{base}/",
        "settings-keys": f"{base}/settings/keys",
        "settings-members": f"{base}/settings/members",
        "settings-approvals": f"{base}/settings/approvals",
        "settings-alerts": f"{base}/settings/alerts",
        "settings-plan": f"{base}/settings/plan",
        "flow-approvals": f"{base}/flows/approvals",
        "flow-execution-waiting-approval": f"{base}/flows/{flow_id}/executions/{execution_id}",
        "not-found": f"{browser.base}/console/w/not-a-workspace/",
    }
    for name, url in pages.items():
        for page, suffix in ((desktop, ""), (phone, "-phone-dark")):
            await page.goto(url)
            await shot(page, name + suffix)
            await assert_accessible(page)
            if suffix:
                assert await page.evaluate("document.documentElement.scrollWidth") <= 375, f"{name} scrolls sideways at 375 px"
    viewer = await make_person("viewer", admin.workspace_id, email="viewer@example.com")
    page = await browser.sign_in(viewer)
    await page.goto(f"{base}/settings/keys")
    await shot(page, "forbidden")
    await assert_accessible(page)
    assert await page.get_by_role("heading", name="Not allowed").is_visible()
