"""Tables over HTTP (spec 4.13): ``/connect/v1/tables`` and their rows, import and export."""

from __future__ import annotations

from aiohttp import web
from sqlalchemy import select

from patchbay.core.appkeys import DB
from patchbay.core.billing.limits import register_counter
from patchbay.core.http.bodies import page_envelope, page_params, read_object
from patchbay.core.http.errors import bad_request
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.tables import service
from patchbay.core.tables.csvstream import csv_source
from patchbay.core.tables.models import DataTable
from patchbay.core.tables.transfer import export_csv, import_csv

routes = web.RouteTableDef()
PREFIX = "/connect/v1/tables"


def _tenant(request: web.Request) -> str:
    return principal_of(request).workspace_id  # type: ignore[return-value]


@routes.get(PREFIX)
@requires("tables.view")
async def list_tables(request: web.Request) -> web.Response:
    """The caller account's tables, with their row counts."""
    workspace_id = _tenant(request)
    async with request.app[DB].session(tenant=workspace_id) as session:
        tables = list(await session.scalars(select(DataTable).order_by(DataTable.created_at, DataTable.id)))
        counts = await service.row_counts(session, [table.id for table in tables])
    return web.json_response([service.table_json(table, counts.get(table.id, 0)) for table in tables])


@routes.post(PREFIX)
@requires("tables.write")
async def create_table(request: web.Request) -> web.Response:
    """Create a table: ``{name, slug?, description?, columns: [{name, type}]}``."""
    body = await read_object(request)
    workspace_id = _tenant(request)
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        table = await service.create_table(
            session, workspace_id=workspace_id, name=body.get("name"), slug=body.get("slug"), columns=body.get("columns", []), description=body.get("description")
        )
    return web.json_response(service.table_json(table, 0), status=201)


@routes.get(PREFIX + "/{slug}")
@requires("tables.view")
async def get_table(request: web.Request) -> web.Response:
    """One table with its schema and row count."""
    workspace_id = _tenant(request)
    async with request.app[DB].session(tenant=workspace_id) as session:
        table = await service.get_table(session, workspace_id, request.match_info["slug"])
        counts = await service.row_counts(session, [table.id])
    return web.json_response(service.table_json(table, counts.get(table.id, 0)))


@routes.patch(PREFIX + "/{slug}")
@requires("tables.write")
async def update_table(request: web.Request) -> web.Response:
    """Update the name, slug, description or column schema."""
    body = await read_object(request)
    workspace_id = _tenant(request)
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        table = await service.get_table(session, workspace_id, request.match_info["slug"])
        await service.update_table(session, table, body)
        counts = await service.row_counts(session, [table.id])
    return web.json_response(service.table_json(table, counts.get(table.id, 0)))


@routes.delete(PREFIX + "/{slug}")
@requires("tables.write")
async def delete_table(request: web.Request) -> web.Response:
    """Delete the table and all its rows."""
    workspace_id = _tenant(request)
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        table = await service.get_table(session, workspace_id, request.match_info["slug"])
        await service.delete_table(session, table)
    return web.json_response({"deleted": True, "slug": request.match_info["slug"]})


# ---------------------------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------------------------


@routes.get(PREFIX + "/{slug}/rows")
@requires("tables.view")
async def list_rows(request: web.Request) -> web.Response:
    """Rows of the table, a page at a time; ``search`` finds rows by the words of their values."""
    page, limit = page_params(request)
    workspace_id = _tenant(request)
    async with request.app[DB].session(tenant=workspace_id) as session:
        table = await service.get_table(session, workspace_id, request.match_info["slug"])
        rows, total = await service.list_rows(session, table, page=page, limit=limit, search=request.query.get("search"))
    return web.json_response(page_envelope([service.row_json(row) for row in rows], page, limit, total))


@routes.post(PREFIX + "/{slug}/rows")
@requires("tables.write")
async def create_row(request: web.Request) -> web.Response:
    """Create a row: ``{data: {}, external_key?}``; the plan caps the account's total rows."""
    body = await read_object(request)
    workspace_id = _tenant(request)
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        table = await service.get_table(session, workspace_id, request.match_info["slug"])
        row = await service.create_row(session, table, body.get("data", {}), body.get("external_key"))
    return web.json_response(service.row_json(row), status=201)


@routes.post(PREFIX + "/{slug}/rows/upsert")
@requires("tables.write")
async def upsert_row(request: web.Request) -> web.Response:
    """Create the row of ``external_key`` or merge ``data`` into it; ``created`` says which."""
    body = await read_object(request)
    workspace_id = _tenant(request)
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        table = await service.get_table(session, workspace_id, request.match_info["slug"])
        row, created = await service.upsert(session, table, body.get("data", {}), body.get("external_key"))
    return web.json_response({**service.row_json(row), "created": created}, status=201)


@routes.get(PREFIX + "/{slug}/rows/lookup")
@requires("tables.view")
async def lookup_row(request: web.Request) -> web.Response:
    """The most recently updated row whose ``column`` equals ``value``, or null."""
    column = request.query.get("column")
    if not column:
        raise bad_request("Query parameter 'column' is required")
    if "value" not in request.query:
        raise bad_request("Query parameter 'value' is required")
    workspace_id = _tenant(request)
    async with request.app[DB].session(tenant=workspace_id) as session:
        table = await service.get_table(session, workspace_id, request.match_info["slug"])
        row = await service.find_row(session, table, column, request.query["value"])
    return web.json_response(service.row_json(row) if row is not None else None)


@routes.patch(PREFIX + "/{slug}/rows/{rowId}")
@requires("tables.write")
async def update_row(request: web.Request) -> web.Response:
    """Merge ``data`` into the row."""
    body = await read_object(request)
    workspace_id = _tenant(request)
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        table = await service.get_table(session, workspace_id, request.match_info["slug"])
        row = await service.update_row(session, table, request.match_info["rowId"], body.get("data", {}))
    return web.json_response(service.row_json(row))


@routes.delete(PREFIX + "/{slug}/rows/{rowId}")
@requires("tables.write")
async def delete_row(request: web.Request) -> web.Response:
    """Delete the row."""
    workspace_id = _tenant(request)
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        table = await service.get_table(session, workspace_id, request.match_info["slug"])
        await service.delete_row(session, table, request.match_info["rowId"])
    return web.json_response({"deleted": True, "id": request.match_info["rowId"]})


# ---------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------


@routes.post(PREFIX + "/{slug}/import")
@requires("tables.write")
async def import_rows(request: web.Request) -> web.Response:
    """Import CSV (raw ``text/csv`` body or ``{csv}``): answers rows created, updated and rejected."""
    workspace_id = _tenant(request)
    async with request.app[DB].session(tenant=workspace_id) as session:
        table = await service.get_table(session, workspace_id, request.match_info["slug"])
    chunks, _ = await csv_source(request)
    report = await import_csv(request.app[DB], table, chunks)
    return web.json_response(report.json(), status=201)


@routes.get(PREFIX + "/{slug}/export")
@requires("tables.view")
async def export_rows(request: web.Request) -> web.StreamResponse:
    """All rows as CSV text, streamed."""
    workspace_id = _tenant(request)
    async with request.app[DB].session(tenant=workspace_id) as session:
        table = await service.get_table(session, workspace_id, request.match_info["slug"])
    response = web.StreamResponse(headers={"Content-Type": "text/csv; charset=utf-8", "Content-Disposition": f'attachment; filename="{table.slug}.csv"'})
    response.enable_chunked_encoding()
    await response.prepare(request)
    async for text in export_csv(request.app[DB], table):
        await response.write(text.encode())
    await response.write_eof()
    return response


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
    register_counter(app, "table_rows", service.count_workspace_rows)
