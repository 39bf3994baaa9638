"""Chromium opens a provider's page from the integrations list; screenshot and axe-core."""

from __future__ import annotations

import re

from tests.console.conftest import assert_accessible, shot


async def test_a_providers_actions_open_in_the_browser(browser, make_person):
    admin = await make_person("admin")
    operator = await make_person("admin", admin.workspace_id, operator=True, email="op@example.com")
    page = await browser.sign_in(operator)
    await page.goto(browser.base + f"/console/w/{admin.workspace_id}/integrations?q=trello")
    await page.get_by_role("link", name="Trello", exact=True).click()
    await page.wait_for_url(re.compile(r"/providers/trello$"))
    await page.get_by_text("create_card", exact=True).click()
    assert await page.locator("#action-create_card pre").first.is_visible()
    await shot(page, "provider")
    await assert_accessible(page)
