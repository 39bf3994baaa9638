"""Records over HTTP (spec 4.14): ``/connect/v1/records``. The bodies read and answered are the
models of ``core.records.api_models``."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import page_params
from patchbay.core.http.csv_bodies import csv_source
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.records import service
from patchbay.core.records.api_models import KIND_QUERY, RecordDeleted, RecordOut, RecordPage, RecordReplayed, RecordsCsvDto, RecordSummary
from patchbay.core.records.transfer import import_records
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.tables.api_models import ImportReport

routes = web.RouteTableDef()
PREFIX = "/connect/v1/records"


def _tenant(request: web.Request) -> str:
    return principal_of(request).workspace_id  # type: ignore[return-value]


@routes.get(PREFIX)
@query(**PAGE_QUERY, **KIND_QUERY, search={"type": "string"})
@returns(RecordPage)
@requires("records.view")
async def list_records(request: web.Request) -> web.Response:
    """Records, newest first; filter by ``resourceType`` and ``providerType``, ``search`` the data."""
    page, limit = page_params(request)
    workspace_id = _tenant(request)
    params = request.query
    records, total = await service.list_records(
        request.app[SERVICES],
        workspace_id,
        page=page,
        limit=limit,
        resource_type=params.get("resourceType"),
        provider_type=params.get("providerType"),
        search=params.get("search"),
    )
    return reply(request, {"data": [service.record_json(record) for record in records], "page": page, "limit": limit, "total": total})


@routes.get(PREFIX + "/summary")
@returns(RecordSummary)
@requires("records.view")
async def records_summary(request: web.Request) -> web.Response:
    """Record counts grouped by resource type and provider."""
    workspace_id = _tenant(request)
    return reply(request, await service.summary(request.app[SERVICES], workspace_id))


@routes.post(PREFIX + "/import")
@query(**KIND_QUERY)
@accepts(RecordsCsvDto, also={"text/csv": {"type": "string"}})
@returns(ImportReport, status=201, description="Imported")
@requires("records.write")
async def import_records_route(request: web.Request) -> web.Response:
    """Import CSV records (raw ``text/csv`` or ``{csv, providerType, resourceType}``); an
    ``external_id`` or ``id`` column makes a re-import update instead of duplicating."""
    chunks, body = await csv_source(request)
    report = await import_records(
        request.app[SERVICES].db,
        workspace_id=_tenant(request),
        chunks=chunks,
        provider_type=request.query.get("providerType", body.get("providerType")),
        resource_type=request.query.get("resourceType", body.get("resourceType")),
    )
    return reply(request, report.json(), status=201)


@routes.get(PREFIX + "/{id}")
@returns(RecordOut)
@requires("records.view")
async def get_record(request: web.Request) -> web.Response:
    """One record."""
    workspace_id = _tenant(request)
    record = await service.record_of(request.app[SERVICES], workspace_id, request.match_info["id"])
    return reply(request, service.record_json(record))


@routes.delete(PREFIX + "/{id}")
@returns(RecordDeleted)
@requires("records.write")
async def delete_record(request: web.Request) -> web.Response:
    """Delete one record."""
    workspace_id = _tenant(request)
    await service.delete_record(request.app[SERVICES], workspace_id, request.match_info["id"])
    return reply(request, {"deleted": True, "id": request.match_info["id"]})


@routes.post(PREFIX + "/{id}/replay")
@returns(RecordReplayed, status=201, description="Replayed")
@requires("records.write")
async def replay_record(request: web.Request) -> web.Response:
    """Re-fire the active trigger subscriptions matching the record's provider and resource type,
    with the record as the trigger payload; answers how many flows were started."""
    workspace_id = _tenant(request)
    fired = await service.replay(request.app[SERVICES], workspace_id, request.match_info["id"])
    return reply(request, {"recordId": request.match_info["id"], "fired": fired}, status=201)


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
