"""Leads (4.15): ``/leads`` list and get, imports and their status, retry of CRM sync. The bodies
read and answered are the models of ``core.leads.api_models``.

``accountId`` is the caller's workspace; another workspace's id answers 404 like any resource of
another tenant.
"""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.http.bodies import page_params, read_body
from patchbay.core.http.errors import not_found
from patchbay.core.http.openapi import PAGE_QUERY, accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.leads import imports, service
from patchbay.core.leads.api_models import ImportsStarted, ImportStatus, LeadDetail, LeadPage, PushQueued, StartImportDto
from patchbay.core.leads.models import CRM_SYNC_STATUSES
from patchbay.core.leads.store import lead_json
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


def account_of(request: web.Request, value: str | None) -> str:
    """The caller's workspace; 404 when ``value`` names another one."""
    workspace_id = principal_of(request).workspace_id
    if value and value != workspace_id:
        raise not_found("Account not found")
    return workspace_id


@routes.get("/leads")
@query(
    accountId={"type": "string"},
    crmSyncStatus={"type": "string", "enum": list(CRM_SYNC_STATUSES)},
    provider={"type": "string"},
    search={"type": "string"},
    **PAGE_QUERY,
)
@returns(LeadPage)
@requires("leads.view")
async def list_leads(request: web.Request) -> web.Response:
    """The account's leads, newest first; filters crmSyncStatus, provider, search (a part of the
    email, full name or phone)."""
    workspace_id = account_of(request, request.query.get("accountId"))
    page, limit = page_params(request)
    rows, total = await service.leads_page(
        request.app[SERVICES],
        workspace_id,
        page=page,
        limit=limit,
        status=request.query.get("crmSyncStatus"),
        provider=request.query.get("provider"),
        search=request.query.get("search"),
    )
    return reply(request, {"data": [lead_json(row) for row in rows], "page": page, "limit": limit, "total": total})


@routes.post("/leads/import/{accountId}")
@accepts(StartImportDto, required=False)
@returns(ImportsStarted, status=201, description="Started")
@requires("leads.write")
async def start_import(request: web.Request) -> web.Response:
    """Start importing the leads of the account's lead connections (or ``connectionId``, or the
    connections of ``provider``); an import already running is answered as it is."""
    workspace_id = account_of(request, request.match_info["accountId"])
    dto = await read_body(request, StartImportDto) if (await request.read()).strip() else StartImportDto()
    started = await imports.start_imports(request.app[SERVICES], workspace_id, connection_id=dto.connectionId, provider=dto.provider)
    return reply(request, {"accountId": workspace_id, "imports": started}, status=201)


@routes.get("/leads/import/{accountId}/status")
@returns(ImportStatus)
@requires("leads.view")
async def import_status(request: web.Request) -> web.Response:
    """The latest import of each connection, and their overall status."""
    workspace_id = account_of(request, request.match_info["accountId"])
    status = await imports.import_status(request.app[SERVICES], workspace_id)
    return reply(request, {"accountId": workspace_id, **status})


@routes.get("/leads/{id}")
@returns(LeadDetail)
@requires("leads.view")
async def get_lead(request: web.Request) -> web.Response:
    """One lead with its CRM syncs."""
    lead, syncs = await service.lead_with_syncs(request.app[SERVICES], principal_of(request).workspace_id, request.match_info["id"])
    return reply(request, lead_json(lead, syncs))


@routes.post("/leads/{id}/retry-sync")
@returns(PushQueued, status=201, description="Queued")
@requires("leads.write")
async def retry_sync(request: web.Request) -> web.Response:
    """Push the lead again to every CRM destination that does not have it yet."""
    lead, queued = await service.retry_sync(request.app[SERVICES], principal_of(request).workspace_id, request.match_info["id"])
    return reply(request, {"leadId": lead.id, "queued": queued, "crmSyncStatus": lead.crm_sync_status}, status=201)
