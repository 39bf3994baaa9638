"""Chromium walks the tables pages: the list, a CSV import whose progress page polls until done,
the rows, a search, and the export; screenshots of every page, axe-core on each."""

from __future__ import annotations

import re

from patchbay.core.appkeys import SERVICES
from patchbay.core.tables import service as tables
from tests.console.conftest import assert_accessible, shot
from tests.console.test_console_tables import COLUMNS, csv_text


async def test_import_browse_and_export_a_table(browser, make_person, console_server, tmp_path):
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    await tables.add_table(services, manager.workspace_id, name="Customers", slug="customers", columns=COLUMNS, description="Who pays")
    upload = tmp_path / "customers.csv"
    upload.write_text(csv_text(120))
    page = await browser.sign_in(manager)

    await page.get_by_role("link", name="Tables", exact=True).click()
    await page.wait_for_url(re.compile(r"/tables$"))
    await shot(page, "tables")
    await assert_accessible(page)

    await page.get_by_role("link", name="Customers").click()
    await page.get_by_label(re.compile("CSV file")).set_input_files(str(upload))
    await page.get_by_role("button", name="Import").click()
    await page.wait_for_url(re.compile(r"/imports/"))
    await page.wait_for_selector('#import-progress[data-state="done"]', timeout=20_000)  # the page's own polling
    assert await page.locator('[data-field="created"]').inner_text() == "120"
    assert await page.locator("#import-bar").get_attribute("value") == "100" or await page.evaluate("document.getElementById('import-bar').value") == 100
    await shot(page, "table-import")
    await assert_accessible(page)

    await page.get_by_role("link", name="Back to the rows").click()
    await page.wait_for_url(re.compile(r"/tables/customers$"))
    rows = page.get_by_role("table", name="Rows of Customers").locator("tbody tr")
    assert await rows.count() == 50 and await page.get_by_role("link", name="Next rows").count() == 1
    await shot(page, "table-rows")
    await assert_accessible(page)
    await page.get_by_label("Search rows").fill("user42")
    await page.get_by_role("button", name="Search").click()
    await page.wait_for_url(re.compile(r"q=user42"))
    assert await page.get_by_role("cell", name="user42@example.com").count() == 1 and await page.get_by_role("cell", name="user43@example.com").count() == 0
    await shot(page, "table-search")
    await assert_accessible(page)

    async with page.expect_download() as download_info:
        await page.get_by_role("link", name="Export CSV").click()
    download = await download_info.value
    exported = tmp_path / "out.csv"
    await download.save_as(exported)
    assert len(exported.read_text().strip().splitlines()) == 121
