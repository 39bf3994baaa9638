"""Tables in the console: the list with row counts; a table's rows, searched and paged by keyset;
a CSV import that runs in the background while the page polls its progress; the CSV export. The
import and export are the tables service's own (``core.tables.transfer``), as the API's."""

from __future__ import annotations

import json

from aiohttp import web

from patchbay.core.console.pages import NAV_ORDER, NavItem, View, action, page, page_headers, render, see_other, signed_in, view_of
from patchbay.core.console.service import PREFIX
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.http.openapi import accepts, form_model
from patchbay.core.http.responses import HTML, REDIRECT, Media, returns
from patchbay.core.tables import imports, service
from patchbay.core.tables.transfer import export_csv

routes = web.RouteTableDef()
NAV = NavItem("Tables", "tables", NAV_ORDER["Tables"])
BASE = PREFIX + "/w/{workspace_id}/tables"
PAGE_SIZE = 50
MAX_SEARCH = 200


@form_model
class ImportForm:
    """A CSV file to import into the table (multipart/form-data)."""

    csrf: str
    """The session's CSRF token."""
    file: str
    """The CSV file (a file part), UTF-8, its header line naming the columns (``id`` and ``external_key`` match existing rows)."""


@routes.get(BASE)
@page()
async def tables_page(request: web.Request, view: View) -> web.Response:
    """The workspace's tables with their row counts."""
    rows = await service.tables_with_counts(view.services, view.workspace_id)
    return render(request, "console/tables.html", {"tables": rows}, view=view, current="tables")


@routes.get(BASE + "/{slug}")
@page()
async def table_page(request: web.Request, view: View) -> web.Response:
    """A table's rows in id order, ``?q=`` searching them, paged by keyset (``?after=``, the link to the next page)."""
    table = await service.table_of(view.services, view.workspace_id, request.match_info["slug"])
    search = (request.query.get("q") or "").strip()[:MAX_SEARCH] or None
    after = request.query.get("after") or None
    rows, next_after = await service.rows_after(view.services, view.workspace_id, table.slug, after=after, limit=PAGE_SIZE, search=search)
    columns = [column["name"] for column in table.columns or []]
    shown = [(row, [row.data.get(name) for name in columns] if columns else [json.dumps(row.data, ensure_ascii=False)]) for row in rows]
    next_query = {**({"q": search} if search else {}), "after": next_after} if next_after else None
    context = {"table": table, "columns": columns or ["data"], "rows": shown, "q": search, "next_query": next_query, "first": after is None}
    return render(request, "console/table.html", context, view=view, current="tables")


@routes.post(BASE + "/{slug}/import")
@accepts(ImportForm, media="multipart/form-data")
@action(description="Started: to the import's progress page")
async def start_csv_import(request: web.Request, view: View, form) -> web.StreamResponse:
    """Start importing a CSV file into the table; the answer opens its progress page."""
    table = await service.table_of(view.services, view.workspace_id, request.match_info["slug"])
    upload = form.get("file")
    if not isinstance(upload, web.FileField):
        raise Invalid("Choose a CSV file to import")
    try:
        text = upload.file.read().decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid("The CSV file must be UTF-8 text") from None
    started = await imports.start_import(view.services, view.workspace_id, table, text)
    raise see_other(request, view.url(f"tables/{table.slug}/imports/{started.id}"))


@routes.get(BASE + "/{slug}/imports/{import_id}")
@page()
async def import_page(request: web.Request, view: View) -> web.Response:
    """An import's progress (the page polls its status until it is done)."""
    table = await service.table_of(view.services, view.workspace_id, request.match_info["slug"])
    item = imports.import_status(view.services, view.workspace_id, request.match_info["import_id"])
    if item.table_slug != table.slug:
        raise NotFound("Import not found")
    status_url = view.url(f"tables/{table.slug}/imports/{item.id}/status")
    return render(request, "console/table_import.html", {"table": table, "item": item.json(), "status_url": status_url}, view=view, current="tables")


#: what the JSON and CSV answers of a workspace URL also answer
NOT_ANSWERED = (
    returns(REDIRECT, status=303, description="Not signed in: to the sign-in"),
    returns(HTML, status=404, description="No such workspace, not one of the person's, or no such item in it"),
)


def _also(handler):
    for mark in NOT_ANSWERED:
        handler = mark(handler)
    return handler


@routes.get(BASE + "/{slug}/imports/{import_id}/status")
@returns(Media("application/json"), description="The import's progress: state (running, done, failed), percent, created, updated, rejected, errors")
@_also
async def import_status(request: web.Request) -> web.Response:
    """An import's progress as JSON, which the progress page polls."""
    view = await view_of(request, await signed_in(request))
    item = imports.import_status(view.services, view.workspace_id, request.match_info["import_id"])
    if item.table_slug != request.match_info["slug"]:
        raise NotFound("Import not found")
    return web.json_response(item.json(), headers=page_headers(request))


@routes.get(BASE + "/{slug}/export")
@returns(Media("text/csv"), description="The rows as CSV, the header line first (an attachment named after the slug)")
@_also
async def export(request: web.Request) -> web.StreamResponse:
    """Every row of the table as CSV, streamed (the API's export)."""
    view = await view_of(request, await signed_in(request))
    table = await service.table_of(view.services, view.workspace_id, request.match_info["slug"])
    headers = {**page_headers(request), "Content-Type": "text/csv; charset=utf-8", "Content-Disposition": f'attachment; filename="{table.slug}.csv"'}
    response = web.StreamResponse(headers=headers)
    response.enable_chunked_encoding()
    await response.prepare(request)
    async for text in export_csv(view.services.db, table):
        await response.write(text.encode())
    await response.write_eof()
    return response
