"""Records over HTTP (spec 4.14): ``/connect/v1/records``."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import DB
from patchbay.core.http.bodies import page_envelope, page_params
from patchbay.core.records import service
from patchbay.core.records.sync import setup_sync
from patchbay.core.records.transfer import import_records
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.tables.csvstream import csv_source

routes = web.RouteTableDef()
PREFIX = "/connect/v1/records"


def _tenant(request: web.Request) -> str:
    return principal_of(request).workspace_id  # type: ignore[return-value]


@routes.get(PREFIX)
@requires("records.view")
async def list_records(request: web.Request) -> web.Response:
    """Records, newest first; filter by ``resourceType`` and ``providerType``, ``search`` the data."""
    page, limit = page_params(request)
    workspace_id = _tenant(request)
    query = request.query
    async with request.app[DB].session(tenant=workspace_id) as session:
        records, total = await service.list_records(
            session, workspace_id, page=page, limit=limit, resource_type=query.get("resourceType"), provider_type=query.get("providerType"), search=query.get("search")
        )
    return web.json_response(page_envelope([service.record_json(record) for record in records], page, limit, total))


@routes.get(PREFIX + "/summary")
@requires("records.view")
async def records_summary(request: web.Request) -> web.Response:
    """Record counts grouped by resource type and provider."""
    workspace_id = _tenant(request)
    async with request.app[DB].session(tenant=workspace_id) as session:
        return web.json_response(await service.summary(session, workspace_id))


@routes.post(PREFIX + "/import")
@requires("records.write")
async def import_records_route(request: web.Request) -> web.Response:
    """Import CSV records (raw ``text/csv`` or ``{csv, providerType, resourceType}``); an
    ``external_id`` or ``id`` column makes a re-import update instead of duplicating."""
    chunks, body = await csv_source(request)
    report = await import_records(
        request.app[DB], workspace_id=_tenant(request), chunks=chunks,
        provider_type=request.query.get("providerType", body.get("providerType")),
        resource_type=request.query.get("resourceType", body.get("resourceType")),
    )  # fmt: skip
    return web.json_response(report.json(), status=201)


@routes.get(PREFIX + "/{id}")
@requires("records.view")
async def get_record(request: web.Request) -> web.Response:
    """One record."""
    workspace_id = _tenant(request)
    async with request.app[DB].session(tenant=workspace_id) as session:
        record = await service.get_record(session, workspace_id, request.match_info["id"])
    return web.json_response(service.record_json(record))


@routes.delete(PREFIX + "/{id}")
@requires("records.write")
async def delete_record(request: web.Request) -> web.Response:
    """Delete one record."""
    workspace_id = _tenant(request)
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        record = await service.get_record(session, workspace_id, request.match_info["id"])
        await session.delete(record)
    return web.json_response({"deleted": True, "id": request.match_info["id"]})


@routes.post(PREFIX + "/{id}/replay")
@requires("records.write")
async def replay_record(request: web.Request) -> web.Response:
    """Re-fire the active trigger subscriptions matching the record's provider and resource type,
    with the record as the trigger payload; answers how many flows were started."""
    workspace_id = _tenant(request)
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        record = await service.get_record(session, workspace_id, request.match_info["id"])
        fired = await service.replay(request.app, session, record)
    return web.json_response({"recordId": record.id, "fired": fired}, status=201)


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
    setup_sync(app)
