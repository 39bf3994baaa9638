"""A Chromium walk of the Members tab: an admin changes a member's role with the row's select and
removes a member after confirming; the refusal of the last admin's demotion is shown on the page."""

from __future__ import annotations

import re

from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.workspaces.models import Membership
from tests.console.conftest import assert_accessible, shot


async def test_an_admin_changes_a_role_and_removes_a_member_in_the_browser(browser, make_person, console_server):
    admin = await make_person("admin")
    bob = await make_person("viewer", admin.workspace_id)
    carol = await make_person("manager", admin.workspace_id)
    page = await browser.sign_in(admin)
    questions: list[str] = []

    async def accept(dialog) -> None:
        questions.append(dialog.message)
        await dialog.accept()

    page.on("dialog", accept)
    await page.goto(f"{browser.base}/console/w/{admin.workspace_id}/settings/members")
    await shot(page, "settings-members-rows")
    await assert_accessible(page)

    await page.get_by_label(f"Role of {bob.email}", exact=True).select_option("manager")
    await page.get_by_role("button", name=f"Change the role of {bob.email}").click()
    await page.wait_for_url(re.compile(r"/settings/members$"))
    assert await page.get_by_label(f"Role of {bob.email}", exact=True).input_value() == "manager"

    await page.get_by_role("button", name=f"Remove {carol.email}").click()
    await page.wait_for_url(re.compile(r"/settings/members$"))
    assert questions and carol.email in questions[-1]
    assert await page.get_by_role("row").filter(has_text=carol.email).count() == 0

    await page.get_by_label(f"Role of {admin.email}", exact=True).select_option("viewer")
    await page.get_by_role("button", name=f"Change the role of {admin.email}").click()
    await page.get_by_role("alert").filter(has_text="last admin").wait_for()
    await shot(page, "settings-members-last-admin")
    await assert_accessible(page)

    async with console_server.app[SERVICES].db.session() as db:
        rows = await db.execute(select(Membership.user_id, Membership.role).where(Membership.workspace_id == admin.workspace_id))
    assert dict(rows.all()) == {admin.user_id: "admin", bob.user_id: "manager"}
