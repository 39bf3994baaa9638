"""CRM push (4.15): push one lead, push a batch, test the destinations. The bodies read and
answered are the models of ``core.crm_push.api_models``."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.crm_push.api_models import BatchQueued, DestinationsTested, PushBatchDto
from patchbay.core.crm_push.service import push_lead, push_leads, test_destinations
from patchbay.core.http.bodies import read_object, structure
from patchbay.core.http.errors import bad_request
from patchbay.core.http.openapi import accepts
from patchbay.core.http.responses import reply, returns
from patchbay.core.leads.api_models import PushQueued
from patchbay.core.leads.routes import account_of
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()

BATCH_LIMIT = 1000
DEFAULT_STATUSES = ["none", "pending", "failed"]


@routes.post("/crm/push/{leadId}")
@returns(PushQueued, status=201, description="Queued")
@requires("leads.write")
async def push_one(request: web.Request) -> web.Response:
    """Push one lead to the account's CRM destinations."""
    lead, queued = await push_lead(request.app[SERVICES], principal_of(request).workspace_id, request.match_info["leadId"])
    return reply(request, {"leadId": lead.id, "queued": queued, "crmSyncStatus": lead.crm_sync_status}, status=201)


async def _batch(request: web.Request) -> PushBatchDto:
    """The body, when there is one; a single ``crmSyncStatus`` is read as a list of one. A JSON
    string is refused where a list is wanted (the converter would read it as a list of letters)."""
    if not (await request.read()).strip():
        return PushBatchDto()
    body = await read_object(request)
    if isinstance(body.get("crmSyncStatus"), str):
        body = {**body, "crmSyncStatus": [body["crmSyncStatus"]]}
    if isinstance(body.get("leadIds"), str):
        raise bad_request("Validation failed: leadIds must be a list of lead ids")
    return structure(body, PushBatchDto)


@routes.post("/crm/push-batch/{accountId}")
@accepts(PushBatchDto, required=False)
@returns(BatchQueued, status=201, description="Queued")
@requires("leads.write")
async def push_batch(request: web.Request) -> web.Response:
    """Push the account's leads not synced yet (or ``leadIds``) to its CRM destinations, at most
    1000 at a time."""
    workspace_id = account_of(request, request.match_info["accountId"])
    dto = await _batch(request)
    statuses = DEFAULT_STATUSES if dto.crmSyncStatus is None else dto.crmSyncStatus
    leads, queued = await push_leads(request.app[SERVICES], workspace_id, lead_ids=dto.leadIds, statuses=statuses, limit=BATCH_LIMIT)
    return reply(request, {"accountId": workspace_id, "leads": leads, "queued": queued}, status=201)


@routes.post("/crm/{accountId}/test")
@returns(DestinationsTested, status=201, description="Tested")
@requires("leads.write")
async def test(request: web.Request) -> web.Response:
    """Check that each CRM destination of the account accepts its credentials."""
    workspace_id = account_of(request, request.match_info["accountId"])
    results = await test_destinations(request.app[SERVICES], workspace_id)
    return reply(request, {"accountId": workspace_id, "ok": bool(results) and all(r["ok"] for r in results), "destinations": results}, status=201)
