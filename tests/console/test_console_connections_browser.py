"""Chromium walks of the Connections pages: find a connection made through the connect API (with
an API key) and open its page; make a connect link; screenshots of every page (desktop, and the
list at 375 px in the dark) and axe-core on each."""

from __future__ import annotations

import re

from tests.console.conftest import assert_accessible, shot
from tests.console.test_console_connections import connect_through_api, console_plugins, console_settings, fake, fake_provider  # noqa: F401 (fixtures)


async def test_find_a_connection_made_through_the_api_and_make_a_connect_link(browser, make_person, console_server):
    person = await make_person("manager")
    connection_id = await connect_through_api(console_server, person.workspace_id)
    page = await browser.sign_in(person)
    await page.get_by_role("navigation", name="Console").get_by_role("link", name="Connections").click()
    await page.wait_for_url(re.compile(r"/connections$"))
    await page.get_by_label("Search").fill("acme")
    await page.get_by_role("button", name="Filter").click()
    await page.wait_for_url(re.compile(r"q=acme"))
    row = page.get_by_role("row").filter(has_text="Acme Sales")
    assert await row.count() == 1 and "connected" in await row.inner_text()
    await shot(page, "connections")
    await assert_accessible(page)
    await row.get_by_role("link", name=re.compile("Fake Key")).click()
    await page.wait_for_url(re.compile(rf"/connections/{connection_id}$"))
    assert (await page.get_by_role("heading", level=1).inner_text()).endswith("Fake Key: Acme Sales")
    text = await page.locator("main").inner_text()
    assert "API key" in text and "GET /contacts" in text and fake_provider.API_KEY not in await page.content()
    await page.get_by_role("button", name="Check health").click()
    await page.wait_for_load_state()
    assert "healthy" in await page.locator("main").inner_text()
    await shot(page, "connection")
    await assert_accessible(page)

    await page.goto(f"{browser.base}/console/w/{person.workspace_id}/connections/link")
    await shot(page, "connections-link-form")
    await assert_accessible(page)
    await page.get_by_label("End user id").fill("user-7")
    await page.get_by_role("button", name="Make the link").click()
    await page.wait_for_load_state()
    url = await page.locator("#connect-url").inner_text()
    assert url.startswith(f"{browser.base}/connect/ui?session=pbcs_")
    await shot(page, "connections-link")
    await assert_accessible(page)

    phone = await browser.new_page(width=375, height=740, color_scheme="dark")
    await browser.sign_in(person, phone)
    await phone.goto(f"{browser.base}/console/w/{person.workspace_id}/connections")
    assert await phone.evaluate("document.documentElement.scrollWidth") <= 375, "nothing scrolls sideways at 375 px"
    await shot(phone, "connections-phone-dark")
    await assert_accessible(phone)
    await phone.goto(f"{browser.base}/console/w/{person.workspace_id}/connections/{connection_id}")
    assert await phone.evaluate("document.documentElement.scrollWidth") <= 375
    await shot(phone, "connection-phone-dark")
    await assert_accessible(phone)
