"""A workspace's home in the console: what needs attention. Each number comes from the service
that owns its rows (connections, webhooks, flows, jobs, approvals)."""

from __future__ import annotations

from datetime import timedelta

from aiohttp import web

from patchbay.core.approvals.service import request_page
from patchbay.core.connections.service import failing_refresh
from patchbay.core.console.pages import NAV_ORDER, NavItem, View, page, render
from patchbay.core.console.service import PREFIX
from patchbay.core.flows import approvals as flow_approvals_service
from patchbay.core.flows.executions import failed_since
from patchbay.core.timeutil import utcnow
from patchbay.core.webhooks.events_service import failing_deliveries

routes = web.RouteTableDef()
NAV = NavItem("Home", "", NAV_ORDER["Home"])
SHOWN = 5  # items listed per kind; the count says how many there are


def _age(seconds: float) -> str:
    """``42 s``, ``3 min``, ``5 h``, ``2 d``."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"


@routes.get(PREFIX + "/w/{workspace_id}/")
@page()
async def home(request: web.Request, view: View) -> web.Response:
    """A workspace's home: connections failing refresh, deliveries failing, executions failed in
    the last 24 hours, the job queue's depth and age, approvals waiting (to connect a provider, and
    the approval steps of flows)."""
    services, workspace_id = view.services, view.workspace_id
    now = utcnow()
    connections, connection_count = await failing_refresh(services, workspace_id=workspace_id, limit=SHOWN)
    deliveries, delivery_count = await failing_deliveries(services, workspace_id, limit=SHOWN)
    executions, execution_count = await failed_since(services, workspace_id=workspace_id, since=now - timedelta(hours=24), limit=SHOWN)
    depth, oldest = await services.jobs.backlog(workspace_id)
    approvals, approval_count = await request_page(services, workspace_id=workspace_id, status="pending", page=1, limit=SHOWN)
    flow_approvals = await flow_approvals_service.approval_views(services, workspace_id=workspace_id, status="pending", limit=SHOWN)
    context = {
        "connections": connections,
        "connection_count": connection_count,
        "deliveries": deliveries,
        "delivery_count": delivery_count,
        "executions": executions,
        "execution_count": execution_count,
        "queue_depth": depth,
        "queue_age": _age((now - oldest).total_seconds()) if oldest is not None else None,
        "approvals": approvals,
        "approval_count": approval_count,
        "flow_approvals": flow_approvals,
        "flow_approval_count": await flow_approvals_service.pending_count(services, workspace_id=workspace_id),
    }
    return render(request, "console/home.html", context, view=view, current="")
