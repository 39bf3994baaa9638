"""Chromium signs a person in to the console through the identity provider's login page; the
console's layout at desktop and phone widths, light and dark, passes axe-core."""

from __future__ import annotations

from tests.console.conftest import assert_accessible, shot


async def test_sign_in_walk_and_layout(browser, make_person):
    person = await make_person("admin")
    page = await browser.sign_in(person, screenshots=True)
    assert page.url.endswith(f"/console/w/{person.workspace_id}/")
    await shot(page, "home")
    await assert_accessible(page)
    assert await page.get_by_role("navigation", name="Console").is_visible()
    assert await page.get_by_role("link", name="Skip to main content").count() == 1
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.textContent") == "Skip to main content"
    cookies = {c["name"]: c for c in await page.context.cookies()}
    assert cookies["pb_console"]["httpOnly"] and cookies["pb_console"]["sameSite"] == "Lax"

    phone = await browser.new_page(width=375, height=740, color_scheme="dark")
    await browser.sign_in(person, phone)
    assert await phone.evaluate("document.documentElement.scrollWidth") <= 375, "nothing scrolls sideways at 375 px"
    await shot(phone, "home-phone-dark")
    await assert_accessible(phone)

    await page.get_by_role("button", name="Sign out").click()
    await page.wait_for_url("**/console/auth/signed-out")
    await shot(page, "signed-out")
    await assert_accessible(page)
