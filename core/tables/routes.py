"""Tables over HTTP (spec 4.13): ``/connect/v1/tables`` and their rows, import and export. The
bodies read and answered are the models of ``core.tables.api_models``."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import page_params, read_body, read_object, structure
from patchbay.core.http.csv_bodies import csv_source
from patchbay.core.http.errors import bad_request
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import Media, reply, returns
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.tables import service
from patchbay.core.tables.api_models import (
    CreateTableDto,
    CsvDto,
    ImportReport,
    RowDeleted,
    RowDto,
    RowOut,
    RowPage,
    TableDeleted,
    TableOut,
    UpdateTableDto,
    UpsertedRow,
    UpsertRowDto,
)
from patchbay.core.tables.transfer import export_csv, import_csv

routes = web.RouteTableDef()
PREFIX = "/connect/v1/tables"


def _tenant(request: web.Request) -> str:
    return principal_of(request).workspace_id  # type: ignore[return-value]


@routes.get(PREFIX)
@returns(list[TableOut])
@requires("tables.view")
async def list_tables(request: web.Request) -> web.Response:
    """The caller account's tables, with their row counts."""
    workspace_id = _tenant(request)
    tables = await service.tables_with_counts(request.app[SERVICES], workspace_id)
    return reply(request, [service.table_json(table, count) for table, count in tables])


@routes.post(PREFIX)
@accepts(CreateTableDto)
@returns(TableOut, status=201, description="Created")
@requires("tables.write")
async def create_table(request: web.Request) -> web.Response:
    """Create a table: ``{name, slug?, description?, columns: [{name, type}]}``."""
    dto = await read_body(request, CreateTableDto)
    workspace_id = _tenant(request)
    columns = [{"name": column.name, "type": column.type} for column in dto.columns]
    table = await service.add_table(request.app[SERVICES], workspace_id, name=dto.name, slug=dto.slug, columns=columns, description=dto.description)
    return reply(request, service.table_json(table, 0), status=201)


@routes.get(PREFIX + "/{slug}")
@returns(TableOut)
@requires("tables.view")
async def get_table(request: web.Request) -> web.Response:
    """One table with its schema and row count."""
    workspace_id = _tenant(request)
    table, count = await service.table_with_count(request.app[SERVICES], workspace_id, request.match_info["slug"])
    return reply(request, service.table_json(table, count))


@routes.patch(PREFIX + "/{slug}")
@accepts(UpdateTableDto)
@returns(TableOut)
@requires("tables.write")
async def update_table(request: web.Request) -> web.Response:
    """Update the name, slug, description or column schema."""
    body = await read_object(request)
    structure(body, UpdateTableDto)  # 400 naming a field of the wrong type; the service reads the keys given
    workspace_id = _tenant(request)
    table, count = await service.table_with_count(request.app[SERVICES], workspace_id, request.match_info["slug"], changes=body)
    return reply(request, service.table_json(table, count))


@routes.delete(PREFIX + "/{slug}")
@returns(TableDeleted)
@requires("tables.write")
async def delete_table(request: web.Request) -> web.Response:
    """Delete the table and all its rows."""
    workspace_id = _tenant(request)
    await service.remove_table(request.app[SERVICES], workspace_id, request.match_info["slug"])
    return reply(request, {"deleted": True, "slug": request.match_info["slug"]})


# ---------------------------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------------------------


@routes.get(PREFIX + "/{slug}/rows")
@query(**PAGE_QUERY, search={"type": "string"})
@returns(RowPage)
@requires("tables.view")
async def list_rows(request: web.Request) -> web.Response:
    """Rows of the table, a page at a time; ``search`` finds rows by the words of their values."""
    page, limit = page_params(request)
    workspace_id = _tenant(request)
    rows, total = await service.rows_of(
        request.app[SERVICES], workspace_id, request.match_info["slug"], page=page, limit=limit, search=request.query.get("search")
    )
    return reply(request, {"data": [service.row_json(row) for row in rows], "page": page, "limit": limit, "total": total})


@routes.post(PREFIX + "/{slug}/rows")
@accepts(RowDto)
@returns(RowOut, status=201, description="Created")
@requires("tables.write")
async def create_row(request: web.Request) -> web.Response:
    """Create a row: ``{data: {}, external_key?}``; the plan caps the account's total rows."""
    dto = await read_body(request, RowDto)
    workspace_id = _tenant(request)
    row = await service.add_row(request.app[SERVICES], workspace_id, request.match_info["slug"], dto.data, dto.external_key)
    return reply(request, service.row_json(row), status=201)


@routes.post(PREFIX + "/{slug}/rows/upsert")
@accepts(UpsertRowDto)
@returns(UpsertedRow, status=201, description="Created or merged")
@requires("tables.write")
async def upsert_row(request: web.Request) -> web.Response:
    """Create the row of ``external_key`` or merge ``data`` into it; ``created`` says which."""
    dto = await read_body(request, UpsertRowDto)
    workspace_id = _tenant(request)
    row, created = await service.upsert_by_key(request.app[SERVICES], workspace_id, request.match_info["slug"], dto.data, dto.external_key)
    return reply(request, {**service.row_json(row), "created": created}, status=201)


@routes.get(PREFIX + "/{slug}/rows/lookup")
@query(column={"type": "string", "minLength": 1}, value={"type": "string"})
@returns(RowOut | None)
@requires("tables.view")
async def lookup_row(request: web.Request) -> web.Response:
    """The most recently updated row whose ``column`` equals ``value``, or null."""
    column = request.query.get("column")
    if not column:
        raise bad_request("Query parameter 'column' is required")
    if "value" not in request.query:
        raise bad_request("Query parameter 'value' is required")
    workspace_id = _tenant(request)
    row = await service.newest_row_where(request.app[SERVICES], workspace_id, request.match_info["slug"], column, request.query["value"])
    return reply(request, service.row_json(row) if row is not None else None)


@routes.patch(PREFIX + "/{slug}/rows/{rowId}")
@accepts(RowDto)
@returns(RowOut)
@requires("tables.write")
async def update_row(request: web.Request) -> web.Response:
    """Merge ``data`` into the row."""
    dto = await read_body(request, RowDto)
    workspace_id = _tenant(request)
    row = await service.change_row(request.app[SERVICES], workspace_id, request.match_info["slug"], request.match_info["rowId"], dto.data)
    return reply(request, service.row_json(row))


@routes.delete(PREFIX + "/{slug}/rows/{rowId}")
@returns(RowDeleted)
@requires("tables.write")
async def delete_row(request: web.Request) -> web.Response:
    """Delete the row."""
    workspace_id = _tenant(request)
    await service.remove_row(request.app[SERVICES], workspace_id, request.match_info["slug"], request.match_info["rowId"])
    return reply(request, {"deleted": True, "id": request.match_info["rowId"]})


# ---------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------


@routes.post(PREFIX + "/{slug}/import")
@accepts(CsvDto, also={"text/csv": {"type": "string"}})
@returns(ImportReport, status=201, description="Imported")
@requires("tables.write")
async def import_rows(request: web.Request) -> web.Response:
    """Import CSV (raw ``text/csv`` body or ``{csv}``): answers rows created, updated and rejected."""
    workspace_id = _tenant(request)
    table = await service.table_of(request.app[SERVICES], workspace_id, request.match_info["slug"])
    chunks, _ = await csv_source(request)
    report = await import_csv(request.app[SERVICES].db, table, chunks)
    return reply(request, report.json(), status=201)


@routes.get(PREFIX + "/{slug}/export")
@returns(Media("text/csv"), description="The rows as CSV, the header line first (an attachment named after the slug)")
@requires("tables.view")
async def export_rows(request: web.Request) -> web.StreamResponse:
    """All rows as CSV text, streamed."""
    workspace_id = _tenant(request)
    table = await service.table_of(request.app[SERVICES], workspace_id, request.match_info["slug"])
    response = web.StreamResponse(headers={"Content-Type": "text/csv; charset=utf-8", "Content-Disposition": f'attachment; filename="{table.slug}.csv"'})
    response.enable_chunked_encoding()
    await response.prepare(request)
    async for text in export_csv(request.app[SERVICES].db, table):
        await response.write(text.encode())
    await response.write_eof()
    return response


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
