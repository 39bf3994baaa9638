"""CRM push (4.15): push one lead, push a batch, test the destinations."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import DB
from patchbay.core.crm_push.service import destinations, leads_to_push, schedule_push, test_destinations
from patchbay.core.http.bodies import read_object
from patchbay.core.http.errors import bad_request
from patchbay.core.http.lookups import get_or_404
from patchbay.core.leads.models import CRM_SYNC_STATUSES, Lead
from patchbay.core.leads.routes import account_of
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()

BATCH_LIMIT = 1000


@routes.post("/crm/push/{leadId}")
@requires("leads.write")
async def push_one(request: web.Request) -> web.Response:
    """Push one lead to the account's CRM destinations."""
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        lead = await get_or_404(session, Lead, request.match_info["leadId"], "Lead not found")
        if not await destinations(request.app, session, workspace_id):
            raise bad_request("No CRM destination is connected")
        queued = await schedule_push(request.app, session, lead)
    return web.json_response({"leadId": lead.id, "queued": queued, "crmSyncStatus": lead.crm_sync_status}, status=201)


@routes.post("/crm/push-batch/{accountId}")
@requires("leads.write")
async def push_batch(request: web.Request) -> web.Response:
    """Push the account's leads not synced yet (or ``leadIds``) to its CRM destinations."""
    workspace_id = account_of(request, request.match_info["accountId"])
    body = await read_object(request) if (await request.read()).strip() else {}
    lead_ids = body.get("leadIds")
    if lead_ids is not None and (not isinstance(lead_ids, list) or not all(isinstance(i, str) for i in lead_ids)):
        raise bad_request("Validation failed: leadIds must be a list of lead ids")
    statuses = body.get("crmSyncStatus", ["none", "pending", "failed"])
    statuses = [statuses] if isinstance(statuses, str) else statuses
    if not isinstance(statuses, list) or not set(statuses) <= set(CRM_SYNC_STATUSES):
        raise bad_request(f"Validation failed: crmSyncStatus must be among {', '.join(CRM_SYNC_STATUSES)}")
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        if not await destinations(request.app, session, workspace_id):
            raise bad_request("No CRM destination is connected")
        leads = await leads_to_push(session, lead_ids=lead_ids, statuses=statuses, limit=BATCH_LIMIT)
        queued = 0
        for lead in leads:
            queued += await schedule_push(request.app, session, lead)
    return web.json_response({"accountId": workspace_id, "leads": len(leads), "queued": queued}, status=201)


@routes.post("/crm/{accountId}/test")
@requires("leads.write")
async def test(request: web.Request) -> web.Response:
    """Check that each CRM destination of the account accepts its credentials."""
    workspace_id = account_of(request, request.match_info["accountId"])
    results = await test_destinations(request.app, workspace_id)
    return web.json_response({"accountId": workspace_id, "ok": bool(results) and all(r["ok"] for r in results), "destinations": results}, status=201)
