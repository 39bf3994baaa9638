"""A Chromium walk of the flow editor: a new flow built with the forms (a trigger, a branch whose
path calls a real local HTTP server with a field inserted by the template helper, a default path),
tested with a sample payload (the untaken path skipped), a step broken and seen failing, fixed and
retried from; screenshots and axe-core on the editor, its test run and the retried execution."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from aiohttp import web
from sqlalchemy import select

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows.models import Flow
from patchbay.testing import LocalServer, add_connection
from tests.console.conftest import assert_accessible, shot


@pytest.fixture
def console_settings():
    """Job workers running: a retry is queued, a worker runs it."""
    return {"background": True}


@pytest.fixture
async def orders():
    """A local HTTP server: POST /orders/<who> answers 200 with JSON, anything else 500."""
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.path)
        if request.path.startswith("/orders/"):
            return web.json_response({"accepted": request.match_info["tail"].split("/")[-1]})
        return web.Response(status=500, text="broken")

    app = web.Application()
    app.router.add_post("/{tail:.*}", handle)
    server = await LocalServer(app).start()
    server.seen = seen
    yield server
    await server.close()


async def document(page) -> dict:
    return json.loads(await page.locator("#flow-document").input_value())


async def test_build_test_break_fix_and_retry_a_flow_in_the_editor(browser, make_person, console_server, orders):
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    connection_id = await add_connection(services, manager.workspace_id, "slack", meta={"displayName": "Acme Slack"})
    page = await browser.sign_in(manager)
    await page.get_by_role("link", name="Flows", exact=True).click()
    await page.get_by_role("link", name="New flow").click()
    await page.wait_for_url(re.compile(r"/flows/new$"))

    await page.get_by_label("Name", exact=True).fill("Route orders")
    options = await page.locator("#trigger-select option").evaluate_all("nodes => nodes.map(n => n.value)")
    trigger = next(value for value in options if value.endswith("|webhook.received"))
    await page.get_by_label("Starts on").select_option(trigger)
    await page.get_by_label(re.compile("^Sample trigger payload")).fill('{"amount": 250, "customer": "ada"}')
    await page.get_by_label(re.compile("^Sample trigger payload")).blur()

    # a branch: path "big" when the amount is over 100, calling the local server
    await page.get_by_label("Type of the new step in the flow").select_option("branch")
    await page.get_by_role("button", name="Add step to the flow").click()
    await page.get_by_label(re.compile("^id of step branch_1")).fill("route")
    await page.get_by_label(re.compile("^id of step branch_1")).press("Tab")
    await page.get_by_label(re.compile("^name of path yes of route")).fill("big")
    await page.get_by_label(re.compile("^name of path yes of route")).press("Tab")
    await page.get_by_label(re.compile("^condition of path big of route")).fill("trigger.amount > 100")
    await page.get_by_label("Type of the new step in path big of route").select_option("http")
    await page.get_by_role("button", name="Add step to path big of route").click()
    await page.get_by_label(re.compile("^id of step http_1")).fill("notify")
    await page.get_by_label(re.compile("^id of step http_1")).press("Tab")
    await page.get_by_label(re.compile("^method of step notify")).fill("POST")
    url = page.get_by_label(re.compile("^url of step notify"))
    await url.fill(orders.url + "/orders/")
    await page.get_by_label("Insert a field into url of step notify").select_option("trigger.customer")
    assert await url.input_value() == orders.url + "/orders/{{ trigger.customer }}"
    # the default path: a transform
    await page.get_by_label("Type of the new step in the default path of route").select_option("transform")
    await page.get_by_role("button", name="Add step to the default path of route").click()
    await page.get_by_label(re.compile("^output of step transform_1")).fill('{"small": true}')
    # an action step's inputs are fields made from the action's input schema (then removed again)
    action = await page.evaluate(
        "() => JSON.parse(document.getElementById('flow-editor-data').textContent).actions"
        ".find(a => a.provider === 'slack' && a.inputs.properties && Object.keys(a.inputs.properties).length)"
    )
    await page.get_by_label("Type of the new step in the flow").select_option("action")
    await page.get_by_role("button", name="Add step to the flow").click()
    await page.get_by_label(re.compile("^provider of step action_1")).select_option(action["provider"])
    await page.get_by_label(re.compile("^action of step action_1")).select_option(action["name"])
    await page.get_by_label(re.compile("^connectionId of step action_1")).select_option(connection_id)
    keys = list(action["inputs"]["properties"])
    for key in keys:
        assert await page.get_by_label(re.compile(rf"^inputs\.{key} of step action_1")).count() == 1, key
    await page.get_by_label(re.compile(rf"^inputs\.{keys[0]} of step action_1")).fill("hello")
    step = (await document(page))["steps"][1]
    assert step == {
        "id": "action_1",
        "type": "action",
        "provider": action["provider"],
        "action": action["name"],
        "connectionId": connection_id,
        "inputs": {keys[0]: "hello"},
    }
    await page.get_by_role("button", name="Remove action_1").click()
    built = await document(page)
    assert [s["id"] for s in built["steps"]] == ["route"]
    assert built["trigger"]["providerType"] and built["steps"][0]["paths"][0]["steps"][0]["url"].endswith("{{ trigger.customer }}")
    await shot(page, "flow-editor")
    await assert_accessible(page)

    await page.get_by_role("button", name="Create draft").click()
    await page.wait_for_url(re.compile(r"/flows/[^/]+/edit$"))
    flow_id = page.url.split("/")[-2]
    async with services.db.session(tenant=manager.workspace_id) as session:
        flow = await session.scalar(select(Flow).where(Flow.id == flow_id))
    assert flow.status == "draft" and flow.trigger == built["trigger"] and flow.steps[0]["id"] == "route"
    assert await page.locator("#flow-problems").count() == 0, "a complete flow has no problems"
    assert await page.get_by_label(re.compile("^Sample trigger payload")).input_value() == '{"amount": 250, "customer": "ada"}', "kept across the save"

    # a step missing a required field is saved as a draft, its problem shown beside the field
    await page.get_by_label(re.compile("^url of step notify")).fill("")
    await page.get_by_role("button", name="Save draft").click()
    await page.wait_for_url(re.compile(r"/edit$"))
    assert "Step notify, field url: Field required" in await page.locator("#flow-problems").inner_text()
    url = page.get_by_label(re.compile("^url of step notify"))
    assert await url.get_attribute("aria-invalid") == "true"
    assert "url: Field required" in await page.locator('[data-step-id="notify"] .has-problem .field-problem').inner_text()
    await shot(page, "flow-editor-problems")
    await assert_accessible(page)
    await url.fill(orders.url + "/orders/{{ trigger.customer }}")

    # test it with the sample payload: the big path runs, the default path is skipped
    await page.get_by_role("button", name="Save and test").click()
    await page.wait_for_url(re.compile(r"/edit\?run="))
    run = page.locator("#test-run")
    assert "completed" in await run.get_by_role("heading", level=2).inner_text()
    assert "took path big" in await run.locator('[data-step="route"] h3').inner_text()
    assert "skipped" in await run.locator('[data-step="transform_1"] h3').inner_text()
    assert orders.seen == ["/orders/ada"]
    await shot(page, "flow-editor-test-run")
    await assert_accessible(page)

    # break the call: the test fails at notify, shown beside the step
    await page.get_by_label(re.compile("^url of step notify")).fill(orders.url + "/broken/{{ trigger.customer }}")
    await page.get_by_role("button", name="Save and test").click()
    await page.wait_for_url(re.compile(r"/edit\?run="))
    failed_id = page.url.split("run=")[1].split("#")[0]
    assert "failed" in await run.get_by_role("heading", level=2).inner_text()
    assert "HTTP 500" in await run.locator('[data-step="notify"] .error').inner_text()
    assert "failed" in await page.locator('[data-step-id="notify"] .last-run').inner_text(), "the result beside the step in the editor"

    # fix it, save, and retry the failed run from notify
    await page.get_by_label(re.compile("^url of step notify")).fill(orders.url + "/orders/{{ trigger.customer }}")
    await page.get_by_role("button", name="Save draft").click()
    await page.wait_for_url(re.compile(rf"/edit\?run={failed_id}"))
    await page.get_by_role("button", name="Retry from notify").click()
    await page.wait_for_url(re.compile(r"/executions/[^/]+$"))
    assert not page.url.endswith(failed_id)
    deadline = asyncio.get_running_loop().time() + 30
    while "completed" not in await page.locator("dl.facts").inner_text():
        assert asyncio.get_running_loop().time() < deadline, "the retry did not complete in time"
        await asyncio.sleep(0.3)
        await page.reload()
    assert orders.seen == ["/orders/ada", "/broken/ada", "/orders/ada"]
    assert failed_id in await page.locator("dl.facts").inner_text(), "retry of the failed run"
    await shot(page, "flow-editor-retried")
    await assert_accessible(page)

    phone = await browser.new_page(width=375, height=740, color_scheme="dark")
    await browser.sign_in(manager, phone)
    await phone.goto(f"{browser.base}/console/w/{manager.workspace_id}/flows/{flow_id}/edit?run={failed_id}")
    await phone.locator('[data-step-id="notify"]').wait_for()
    assert await phone.evaluate("document.documentElement.scrollWidth") <= 375
    await assert_accessible(phone)
