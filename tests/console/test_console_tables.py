"""The tables pages over HTTP: the list, rows searched and paged by keyset, a CSV import whose
progress is polled until done, the CSV export; another workspace's table and import answer 404, a
viewer's import and an import without its CSRF token are refused."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import FormData

from patchbay.core.appkeys import SERVICES
from patchbay.core.console import routes_tables
from patchbay.core.tables import service as tables
from tests.console.conftest import csrf_of

COLUMNS = [{"name": "email", "type": "text"}, {"name": "plan", "type": "text"}, {"name": "seats", "type": "number"}]


async def _page(http, path: str) -> tuple[int, str]:
    async with http.get(http.base + path) as response:
        return response.status, await response.text()


def csv_text(count: int) -> str:
    return "external_key,email,plan,seats\n" + "".join(f"k{n},user{n}@example.com,{'pro' if n % 2 else 'free'},{n}\n" for n in range(count))


async def _import(http, path: str, text: str, *, csrf: str | None):
    form = FormData()
    if csrf is not None:
        form.add_field("csrf", csrf)
    form.add_field("file", text.encode(), filename="rows.csv", content_type="text/csv")
    async with http.post(http.base + path, data=form, allow_redirects=False) as response:
        return response.status, await response.text(), response.headers.get("Location")


async def _until_done(http, status_url: str) -> dict:
    async def poll() -> dict:
        while True:
            async with http.get(http.base + status_url) as response:
                assert response.status == 200
                status = await response.json()
            if status["state"] != "running":
                return status
            await asyncio.sleep(0.05)  # polling, as the page does; bounded by the wait_for below

    return await asyncio.wait_for(poll(), 30)


async def test_import_browse_search_page_and_export(make_person, sign_in, console_server, monkeypatch):
    monkeypatch.setattr(routes_tables, "PAGE_SIZE", 20)
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    await tables.add_table(services, manager.workspace_id, name="Customers", slug="customers", columns=COLUMNS, description=None)
    http = await sign_in(manager)
    base = f"/console/w/{manager.workspace_id}/tables"
    status, page = await _page(http, base)
    assert status == 200 and "Customers" in page
    status, page = await _page(http, f"{base}/customers")
    text = csv_text(45).replace("k7,user7@example.com,pro,7", "k7,user7@example.com,pro,many")
    status, _, location = await _import(http, f"{base}/customers/import", text, csrf=csrf_of(page))
    assert status == 303 and "/imports/" in location
    status, page = await _page(http, location)
    assert status == 200 and "<progress" in page
    done = await _until_done(http, location + "/status")
    assert done["state"] == "done" and done["created"] == 44 and done["rejected"] == 1 and done["errors"][0]["line"] == 9 and done["percent"] == 100
    # browse by keyset: 20 + 20 + 4
    path, seen = f"{base}/customers", []
    while path:
        status, page = await _page(http, path)
        assert status == 200
        seen += [n for n in range(45) if f"user{n}@example.com<" in page]
        more = page.split('">Next rows</a>')[0].rsplit('href="', 1)[1] if ">Next rows</a>" in page else None
        path = more.replace("&amp;", "&") if more else None
    assert len(seen) == 44 and 7 not in seen
    status, page = await _page(http, f"{base}/customers?q=user12")
    assert status == 200 and "user12@example.com" in page and "user13@example.com" not in page
    async with http.get(http.base + f"{base}/customers/export") as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("text/csv")
        exported = await response.text()
    lines = exported.strip().splitlines()
    assert lines[0] == "id,external_key,email,plan,seats" and len(lines) == 45 and any(",k12,user12@example.com,free,12" in line for line in lines)


async def test_a_bad_header_fails_the_import_with_its_reason(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    await tables.add_table(services, manager.workspace_id, name="Customers", slug="customers", columns=COLUMNS, description=None)
    http = await sign_in(manager)
    base = f"/console/w/{manager.workspace_id}/tables/customers"
    csrf = csrf_of((await _page(http, base))[1])
    status, _, location = await _import(http, f"{base}/import", "nope,email\n1,a@b.c\n", csrf=csrf)
    done = await _until_done(http, location + "/status")
    assert done["state"] == "failed" and "nope" in done["error"]
    status, page, _ = await _import(http, f"{base}/import", "", csrf=csrf)
    assert status in (303, 400)


async def test_another_workspaces_table_and_import_answer_404(make_person, sign_in, console_server):
    services = console_server.app[SERVICES]
    mine = await make_person("manager")
    theirs = await make_person("manager")
    await tables.add_table(services, theirs.workspace_id, name="Secret", slug="secret", columns=COLUMNS, description=None)
    await tables.add_table(services, mine.workspace_id, name="Mine", slug="mine", columns=COLUMNS, description=None)
    their_http = await sign_in(theirs)
    their_base = f"/console/w/{theirs.workspace_id}/tables/secret"
    _, _, location = await _import(their_http, f"{their_base}/import", csv_text(3), csrf=csrf_of((await _page(their_http, their_base))[1]))
    import_id = location.rsplit("/", 1)[1]
    http = await sign_in(mine)
    base = f"/console/w/{mine.workspace_id}/tables"
    for path in (f"{base}/secret", f"{base}/secret/export", f"{base}/mine/imports/{import_id}", f"{base}/mine/imports/{import_id}/status"):
        assert (await _page(http, path))[0] == 404, path
    status, _, _ = await _import(http, f"{base}/secret/import", csv_text(2), csrf=csrf_of((await _page(http, base))[1]))
    assert status == 404


@pytest.mark.parametrize("who", ["viewer", "no csrf"])
async def test_a_viewer_or_a_form_without_csrf_cannot_import(make_person, sign_in, console_server, who):
    services = console_server.app[SERVICES]
    manager = await make_person("manager")
    await tables.add_table(services, manager.workspace_id, name="Customers", slug="customers", columns=COLUMNS, description=None)
    person = await make_person("viewer", manager.workspace_id) if who == "viewer" else manager
    http = await sign_in(person)
    base = f"/console/w/{manager.workspace_id}/tables/customers"
    status, page = await _page(http, base)
    assert status == 200 and (who != "viewer" or "/import" not in page)
    status, _, _ = await _import(http, f"{base}/import", csv_text(3), csrf=csrf_of(page) if who == "viewer" else None)
    assert status == 403
    assert (await tables.tables_with_counts(services, manager.workspace_id))[0][1] == 0


@pytest.mark.both_databases
async def test_the_keyset_of_rows_and_its_search_on_both_databases(aiohttp_client, make_app, database_url):
    from patchbay.core.testing import create_workspace_with_key

    client = await aiohttp_client(make_app(database_url=database_url))
    services = client.server.app[SERVICES]
    workspace_id = (await create_workspace_with_key(services))["workspace_id"]
    await tables.add_table(services, workspace_id, name="Customers", slug="customers", columns=COLUMNS, description=None)
    for n in range(7):
        await tables.add_row(services, workspace_id, "customers", {"email": f"user{n}@example.com", "plan": "pro" if n % 2 else "free", "seats": n}, None)
    seen, after = [], None
    while True:
        rows, after = await tables.rows_after(services, workspace_id, "customers", after=after, limit=3, search=None)
        seen += [row.data["seats"] for row in rows]
        if after is None:
            break
    assert seen == list(range(7))
    rows, after = await tables.rows_after(services, workspace_id, "customers", after=None, limit=3, search="pro")
    assert sorted(row.data["seats"] for row in rows) == [1, 3, 5] and after is None
