"""Chromium opens a provider's integration page as an operator, passes axe-core, and saves the
workspace's OAuth app through the form."""

from __future__ import annotations

import re

from patchbay.core.appkeys import SERVICES
from patchbay.core.integrations import service as integrations
from tests.console.conftest import assert_accessible, shot


async def test_an_operator_saves_a_workspace_app_in_the_browser(browser, make_person, console_server):
    admin = await make_person("admin")
    operator = await make_person("admin", admin.workspace_id, operator=True, email="op@example.com")
    page = await browser.sign_in(operator)
    await page.goto(f"{console_server.base}/console/w/{admin.workspace_id}/integrations/github")
    assert await page.get_by_role("heading", name="The deployment").count() == 1
    await assert_accessible(page)
    await page.locator("#workspace-client-id").fill("browser-client")
    await page.locator("#workspace-client-secret").fill("browser-secret-value")
    await page.locator("#workspace-scopes").fill("repo read:user")
    await page.get_by_role("button", name="Save this workspace's settings").click()
    await page.wait_for_selector("text=Saved.")
    assert "browser-secret-value" not in await page.content()
    await shot(page, "integration-github")
    await assert_accessible(page)
    described = await integrations.describe(console_server.app[SERVICES], workspace_id=admin.workspace_id, provider_name="github")
    assert described["clientId"] == "browser-client" and described["scopes"] == ["repo", "read:user"]
    assert re.search(r"from this workspace", await page.content())
