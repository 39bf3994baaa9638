"""Chromium walks of the Logs page: find a failed delivery through the filters, open it, and
redeliver it to the local receiver once it answers 200; replay an inbound event; open a failed
execution's steps; watch the live tail put a new entry at the top; screenshots of every page and
axe-core on each."""

from __future__ import annotations

import re

from patchbay.core.appkeys import SERVICES
from tests.console.conftest import assert_accessible, shot
from tests.console.test_console_logs import (  # noqa: F401 (fixtures)
    PAYLOAD_SECRET,
    console_settings,
    delivery_rows,
    failed_delivery,
    failed_execution,
    receiver,
    send_event,
    subscribed,
    wait_until,
)


async def test_find_a_failed_delivery_redeliver_it_and_replay_an_event(browser, make_person, console_server, receiver):
    person = await make_person("manager")
    await subscribed(console_server, person.workspace_id, receiver)
    event_id = await send_event(console_server, note="walk", access_token=PAYLOAD_SECRET)
    delivery = await failed_delivery(console_server, event_id)
    page = await browser.sign_in(person)
    await page.get_by_role("navigation", name="Console").get_by_role("link", name="Logs").click()
    await page.wait_for_url(re.compile(r"/logs$"))
    await shot(page, "logs")
    await assert_accessible(page)
    await page.get_by_label("Kind").select_option("delivery")
    await page.get_by_label("Status").select_option("failed")
    await page.get_by_role("button", name="Filter").click()
    await page.wait_for_url(re.compile(r"kind=delivery"))
    rows = page.locator("#log-rows tr")
    assert await rows.count() == 1 and "failed" in await rows.first.inner_text()
    await shot(page, "logs-failed-deliveries")
    await rows.first.get_by_role("link").first.click()
    await page.wait_for_url(re.compile(rf"/logs/delivery/{delivery.id}$"))
    assert await page.get_by_role("heading", name="Attempts").is_visible()
    assert PAYLOAD_SECRET not in await page.content()
    await shot(page, "logs-delivery-failed")
    await assert_accessible(page)

    receiver.statuses = [200]
    await page.get_by_role("button", name="Redeliver").click()
    await page.wait_for_url(re.compile(r"/logs/delivery/(?!" + delivery.id + r")[0-9a-f-]{36}$"))
    await receiver.wait_for(5)
    assert receiver.requests[-1]["headers"]["X-Connect-Delivery"] == event_id

    async def succeeded():
        rows = await delivery_rows(console_server, event_id)
        return len(rows) == 2 and rows[1].status == "succeeded"

    await wait_until(succeeded)
    await page.reload()
    assert "succeeded" in await page.locator("main").inner_text()
    await shot(page, "logs-delivery-redelivered")
    await assert_accessible(page)

    await page.get_by_role("link", name=event_id).click()
    await page.wait_for_url(re.compile(rf"/logs/inbound/{event_id}$"))
    await shot(page, "logs-inbound")
    await assert_accessible(page)
    await page.get_by_role("button", name="Replay to its subscriptions").click()
    await page.wait_for_url(re.compile(rf"/logs/inbound/{event_id}$"))
    await receiver.wait_for(6)
    assert receiver.requests[-1]["body"] == receiver.requests[0]["body"]


async def test_a_failed_execution_and_the_live_tail(browser, make_person, console_server):
    person = await make_person("manager")
    execution = await failed_execution(console_server, person.workspace_id)
    page = await browser.sign_in(person)
    await page.goto(f"{browser.base}/console/w/{person.workspace_id}/logs")
    assert await page.get_by_label("Live: new entries appear at the top").is_checked()
    services = console_server.app[SERVICES]
    services.connections.audit.add(
        workspace_id=person.workspace_id,
        connection_id=execution.id,
        provider="fakecrm",
        source="proxy",
        method="GET",
        path="/tail/me",
        status=503,
        duration_ms=4,
    )
    fresh = page.locator("#log-rows tr.fresh")
    await fresh.first.wait_for(timeout=15_000)
    assert "GET /tail/me" in await fresh.first.inner_text()
    assert "1 new entry" in await page.locator("#tail-status").inner_text()
    await shot(page, "logs-live-tail")
    await assert_accessible(page)

    await page.locator("#log-rows tr").filter(has_text="Sync leads").get_by_role("link").first.click()
    await page.wait_for_url(re.compile(rf"/logs/execution/{execution.id}$"))
    main = await page.locator("main").inner_text()
    assert "connection refused" in main and "ada@example.com" in main and PAYLOAD_SECRET not in await page.content()
    await shot(page, "logs-execution")
    await assert_accessible(page)
    await page.get_by_role("button", name="Retry with the same payload").click()
    await page.wait_for_url(re.compile(r"/logs/execution/(?!" + execution.id + r")[0-9a-f-]{36}$"))
    assert "replay" in await page.locator("main").inner_text()

    phone = await browser.new_page(width=375, height=740, color_scheme="dark")
    await browser.sign_in(person, phone)
    await phone.goto(f"{browser.base}/console/w/{person.workspace_id}/logs")
    assert await phone.evaluate("document.documentElement.scrollWidth") <= 375, "nothing scrolls sideways at 375 px"
    await shot(phone, "logs-phone-dark")
    await assert_accessible(phone)
    await phone.goto(f"{browser.base}/console/w/{person.workspace_id}/logs/execution/{execution.id}")
    assert await phone.evaluate("document.documentElement.scrollWidth") <= 375
    await shot(phone, "logs-execution-phone-dark")
    await assert_accessible(phone)
