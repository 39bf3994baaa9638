"""Leads (4.15): ``/leads`` list and get, imports and their status, retry of CRM sync.

``accountId`` is the caller's workspace; another workspace's id answers 404 like any resource of
another tenant.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from sqlalchemy import func, or_, select

from patchbay.core.appkeys import DB
from patchbay.core.connections.models import Connection
from patchbay.core.crm_push.service import schedule_push
from patchbay.core.http.bodies import page_envelope, page_params, read_object
from patchbay.core.http.errors import bad_request, not_found
from patchbay.core.http.lookups import get_or_404
from patchbay.core.leads.imports import import_json, importable, queue_page
from patchbay.core.leads.models import CRM_SYNC_STATUSES, Lead, LeadImport, LeadSync
from patchbay.core.leads.service import lead_json
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


def account_of(request: web.Request, value: str | None) -> str:
    """The caller's workspace; 404 when ``value`` names another one."""
    workspace_id = principal_of(request).workspace_id
    if value and value != workspace_id:
        raise not_found("Account not found")
    return workspace_id


async def _optional_object(request: web.Request) -> dict[str, Any]:
    return await read_object(request) if (await request.read()).strip() else {}


@routes.get("/leads")
@requires("leads.view")
async def list_leads(request: web.Request) -> web.Response:
    """The account's leads, newest first; filters crmSyncStatus, provider, search."""
    workspace_id = account_of(request, request.query.get("accountId"))
    page, limit = page_params(request)
    conditions = []
    status = request.query.get("crmSyncStatus")
    if status:
        if status not in CRM_SYNC_STATUSES:
            raise bad_request(f"Query parameter 'crmSyncStatus' must be one of {', '.join(CRM_SYNC_STATUSES)}")
        conditions.append(Lead.crm_sync_status == status)
    if request.query.get("provider"):
        conditions.append(Lead.provider == request.query["provider"])
    search = request.query.get("search", "").strip().lower()
    if search:
        pattern = f"%{search}%"
        conditions.append(or_(Lead.email.like(pattern), func.lower(Lead.full_name).like(pattern), Lead.phone.like(pattern)))
    async with request.app[DB].session(tenant=workspace_id) as session:
        total = await session.scalar(select(func.count()).select_from(Lead).where(*conditions))
        rows = (await session.scalars(select(Lead).where(*conditions).order_by(Lead.created_at.desc(), Lead.id).offset((page - 1) * limit).limit(limit))).all()
    return web.json_response(page_envelope([lead_json(row) for row in rows], page, limit, total or 0))


@routes.post("/leads/import/{accountId}")
@requires("leads.write")
async def start_import(request: web.Request) -> web.Response:
    """Start importing the leads of the account's lead connections (or ``connectionId``)."""
    workspace_id = account_of(request, request.match_info["accountId"])
    body = await _optional_object(request)
    connection_id, provider = body.get("connectionId"), body.get("provider")
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        statement = select(Connection).where(Connection.status == "connected")
        if connection_id:
            statement = statement.where(Connection.id == connection_id)
        if provider:
            statement = statement.where(Connection.provider == provider)
        connections = [c for c in (await session.scalars(statement)).all() if importable(request.app, c.provider)]
        if connection_id and not connections:
            raise not_found("Connection not found or its provider cannot import leads")
        if not connections:
            raise bad_request("No connection of this account can import leads")
        started = []
        for connection in connections:
            running = await session.scalar(
                select(LeadImport).where(LeadImport.connection_id == connection.id, LeadImport.status.in_(("queued", "running")))
            )
            if running is not None:
                started.append(running)
                continue
            row = LeadImport(provider=connection.provider, connection_id=connection.id, status="queued")
            session.add(row)
            await session.flush()
            queue_page(request.app, session, row)
            started.append(row)
    return web.json_response({"accountId": workspace_id, "imports": [import_json(row) for row in started]}, status=201)


@routes.get("/leads/import/{accountId}/status")
@requires("leads.view")
async def import_status(request: web.Request) -> web.Response:
    """The latest import of each connection, and their overall status."""
    workspace_id = account_of(request, request.match_info["accountId"])
    async with request.app[DB].session(tenant=workspace_id) as session:
        rows = (await session.scalars(select(LeadImport).order_by(LeadImport.created_at.desc()))).all()
    latest: dict[str, LeadImport] = {}
    for row in rows:
        latest.setdefault(row.connection_id, row)
    statuses = {row.status for row in latest.values()}
    overall = (
        "none" if not statuses else "running" if statuses & {"queued", "running"} else "failed" if "failed" in statuses else "completed"
    )
    imports = [import_json(row) for row in latest.values()]
    return web.json_response({
        "accountId": workspace_id, "status": overall, "imports": imports,
        "imported": sum(i["imported"] for i in imports), "duplicates": sum(i["duplicates"] for i in imports),
    })  # fmt: skip


@routes.get("/leads/{id}")
@requires("leads.view")
async def get_lead(request: web.Request) -> web.Response:
    """One lead with its CRM syncs."""
    async with request.app[DB].session(tenant=principal_of(request).workspace_id) as session:
        lead = await get_or_404(session, Lead, request.match_info["id"], "Lead not found")
        syncs = (await session.scalars(select(LeadSync).where(LeadSync.lead_id == lead.id).order_by(LeadSync.created_at))).all()
    return web.json_response(lead_json(lead, list(syncs)))


@routes.post("/leads/{id}/retry-sync")
@requires("leads.write")
async def retry_sync(request: web.Request) -> web.Response:
    """Push the lead again to every CRM destination that does not have it yet."""
    async with request.app[DB].transaction(tenant=principal_of(request).workspace_id) as session:
        lead = await get_or_404(session, Lead, request.match_info["id"], "Lead not found")
        queued = await schedule_push(request.app, session, lead)
    return web.json_response({"leadId": lead.id, "queued": queued, "crmSyncStatus": lead.crm_sync_status}, status=201)
