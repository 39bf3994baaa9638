"""Chromium walks the webhooks pages: the endpoints, one endpoint, a test event that a local
receiver gets, its delivery with its attempt, and a rotated secret shown once; screenshots of
every page, axe-core on each."""

from __future__ import annotations

import asyncio
import json
import re

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.testing import drain
from patchbay.testing import Receiver
from tests.console.conftest import assert_accessible, shot
from tests.console.test_console_webhooks import subscribe


async def test_a_test_event_and_a_rotated_secret(browser, make_person, console_server):
    services = console_server.app[SERVICES]
    receiver = await Receiver().start()
    try:
        manager = await make_person("manager")
        subscription = await subscribe(services, manager.workspace_id, receiver.url)
        page = await browser.sign_in(manager)
        page.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))

        await page.get_by_role("link", name="Webhooks", exact=True).click()
        await page.wait_for_url(re.compile(r"/webhooks$"))
        await shot(page, "webhooks")
        await assert_accessible(page)

        await page.get_by_role("link", name=receiver.url + "/hooks").click()
        await page.wait_for_url(re.compile(rf"/webhooks/{subscription.id}$"))
        await page.get_by_role("button", name="Send a test event").click()
        await page.wait_for_url(re.compile(r"\?sent="))
        await drain(services)
        await receiver.wait_for(1)
        assert json.loads(receiver.requests[0]["body"])["event"] == "webhook.test"
        await page.reload()
        assert await page.get_by_role("table", name=re.compile("Attempts of delivery")).count() == 1
        await shot(page, "webhook-endpoint")
        await assert_accessible(page)

        await page.get_by_role("button", name="Rotate the signing secret").click()
        await page.wait_for_url(re.compile(r"/rotate-secret$"))
        secret = (await page.locator("#new-secret").inner_text()).strip()
        assert secret.startswith("whsec_")
        await shot(page, "webhook-secret-rotated")
        await assert_accessible(page)
    finally:
        await receiver.close()
