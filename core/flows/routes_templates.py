"""Flow templates over HTTP (spec 4.9, 2.6): the list (system, public and the caller's own, most
cloned first), one template, clone into a draft flow bound to a compatible connection (monthly cap
of 8A), and ``POST /connect/v1/flows/{flowId}/publish-as-template``."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.flows import service, templates
from patchbay.core.flows.api_models import CloneTemplateDto, FlowOut, PublishTemplateDto, TemplateOut, TemplateSummary, read_checked
from patchbay.core.http.openapi import accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires

routes = web.RouteTableDef()


@routes.get("/connect/v1/flow-templates")
@query(category={"type": "string"})
@returns(list[TemplateSummary])
@requires("templates.view")
async def list_templates(request: web.Request) -> web.Response:
    """System, public and the workspace's own templates, most cloned first; ``?category=`` filters."""
    rows = await templates.list_templates(request.app[SERVICES], workspace_id=principal_of(request).workspace_id, category=request.query.get("category"))
    return reply(request, [templates.template_json(t, with_steps=False) for t in rows])


@routes.get("/connect/v1/flow-templates/{slug}")
@returns(TemplateOut)
@requires("templates.view")
async def get_template(request: web.Request) -> web.Response:
    """One template with its steps."""
    template = await templates.get_template(request.app[SERVICES], workspace_id=principal_of(request).workspace_id, slug=request.match_info["slug"])
    return reply(request, templates.template_json(template))


@routes.post("/connect/v1/flow-templates/{slug}/clone")
@accepts(CloneTemplateDto, required=False)
@returns(FlowOut, status=201, description="The new draft flow")
@requires("templates.write")
async def clone_template(request: web.Request) -> web.Response:
    """Create a draft flow from a template, its trigger bound to ``triggerConnectionId`` (or the
    workspace's connection to the trigger's provider); monthly cap per plan."""
    body = await read_checked(request, CloneTemplateDto, optional=True)
    flow = await templates.clone(
        request.app[SERVICES],
        workspace_id=principal_of(request).workspace_id,
        slug=request.match_info["slug"],
        name=body.get("name"),
        trigger_connection_id=body.get("triggerConnectionId"),
    )
    return reply(request, service.flow_json(flow), status=201)


@routes.post("/connect/v1/flows/{flowId}/publish-as-template")
@accepts(PublishTemplateDto, required=False)
@returns(TemplateOut, status=201, description="Published as a template")
@requires("templates.publish")
async def publish_as_template(request: web.Request) -> web.Response:
    """Share a flow as a template: ``{visibility: private | public | pending_review, category?}``;
    publishing the same flow again updates its template. ``public`` is a request: the template is
    ``pending_review`` (seen by its workspace only) until an operator approves it with
    ``patchbay templates approve``; republishing a public template sends it back to review."""
    body = await read_checked(request, PublishTemplateDto, optional=True)
    template = await templates.publish_flow(
        request.app[SERVICES],
        workspace_id=principal_of(request).workspace_id,
        flow_id=request.match_info["flowId"],
        visibility=body.get("visibility", "private"),
        category=body.get("category", "custom"),
    )
    return reply(request, templates.template_json(template), status=201)


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
