"""Flow templates over HTTP (spec 4.9, 2.6): the list (system, public and the caller's own, most
cloned first), one template, clone into a draft flow bound to a compatible connection (monthly cap
of 8A), and ``POST /connect/v1/flows/{flowId}/publish-as-template``."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web
from sqlalchemy import or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from patchbay.core.appkeys import DB, REGISTRY
from patchbay.core.billing.limits import consume, enforce_limit
from patchbay.core.connections.models import Connection
from patchbay.core.flows import service
from patchbay.core.flows.api_models import CloneTemplateDto, FlowOut, PublishTemplateDto, TemplateOut, TemplateSummary, read_checked
from patchbay.core.flows.models import Flow, FlowTemplate, FlowTriggerSubscription
from patchbay.core.flows.template_builders import providers_of_template
from patchbay.core.http.errors import bad_request, not_found
from patchbay.core.http.openapi import accepts, query
from patchbay.core.http.responses import reply, returns
from patchbay.core.security.auth import principal_of, requires
from patchbay.core.timeutil import iso, new_id, utcnow

routes = web.RouteTableDef()

_PLACEHOLDER = "$connection:"


def template_json(template: FlowTemplate, *, with_steps: bool = True) -> dict[str, Any]:
    body = {
        "slug": template.slug,
        "name": template.name,
        "description": template.description,
        "category": template.category,
        "trigger": template.trigger,
        "stepCount": len(template.steps or []),
        "providers": list(template.providers or []),
        "cloneCount": template.clone_count,
        "visibility": template.visibility,
        "isSystem": template.is_system,
        "createdAt": iso(template.created_at),
    }
    if with_steps:
        body["steps"] = template.steps
    return body


def _visible(workspace_id: str):
    return or_(FlowTemplate.is_system.is_(True), FlowTemplate.visibility == "public", FlowTemplate.workspace_id == workspace_id)


async def _template(session, slug: str, workspace_id: str) -> FlowTemplate:
    template = await session.scalar(select(FlowTemplate).where(FlowTemplate.slug == slug, _visible(workspace_id)))
    if template is None:
        raise not_found(f"Template not found: {slug}")
    return template


@routes.get("/connect/v1/flow-templates")
@query(category={"type": "string"})
@returns(list[TemplateSummary])
@requires("templates.view")
async def list_templates(request: web.Request) -> web.Response:
    """System, public and the workspace's own templates, most cloned first; ``?category=`` filters."""
    statement = select(FlowTemplate).where(_visible(principal_of(request).workspace_id))
    if request.query.get("category"):
        statement = statement.where(FlowTemplate.category == request.query["category"])
    async with request.app[DB].session() as session:
        rows = (await session.scalars(statement.order_by(FlowTemplate.clone_count.desc(), FlowTemplate.is_system.desc(), FlowTemplate.slug))).all()
    return reply(request, [template_json(t, with_steps=False) for t in rows])


@routes.get("/connect/v1/flow-templates/{slug}")
@returns(TemplateOut)
@requires("templates.view")
async def get_template(request: web.Request) -> web.Response:
    """One template with its steps."""
    async with request.app[DB].session() as session:
        template = await _template(session, request.match_info["slug"], principal_of(request).workspace_id)
    return reply(request, template_json(template))


def _bind(value: Any, connections: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _bind(v, connections) for k, v in value.items()}
    if isinstance(value, list):
        return [_bind(v, connections) for v in value]
    if isinstance(value, str) and value.startswith(_PLACEHOLDER):
        return connections.get(value[len(_PLACEHOLDER):], value)
    return value


@routes.post("/connect/v1/flow-templates/{slug}/clone")
@accepts(CloneTemplateDto, required=False)
@returns(FlowOut, status=201, description="The new draft flow")
@requires("templates.write")
async def clone_template(request: web.Request) -> web.Response:
    """Create a draft flow from a template, its trigger bound to ``triggerConnectionId`` (or the
    workspace's connection to the trigger's provider); monthly cap per plan."""
    body = await read_checked(request, CloneTemplateDto, optional=True)
    name = body.get("name")
    trigger_connection_id = body.get("triggerConnectionId")
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        template = await _template(session, request.match_info["slug"], workspace_id)
        await consume(session, workspace_id, "template_clones")
        trigger = dict(template.trigger or {})
        provider = trigger.get("providerType")
        live = (await session.scalars(select(Connection).where(Connection.status != "disconnected").order_by(Connection.created_at))).all()
        bound: dict[str, str] = {}
        for connection in live:
            bound.setdefault(connection.provider, connection.id)
        connection_id = None
        if provider:
            if trigger_connection_id:
                match = next((c for c in live if c.id == trigger_connection_id), None)
                if match is None:
                    raise bad_request("triggerConnectionId: no such connection in this workspace")
                if match.provider != provider:
                    raise bad_request(f"triggerConnectionId: the template's trigger needs a {provider} connection, not {match.provider}")
                connection_id = match.id
            else:
                connection_id = bound.get(provider)
                if connection_id is None:
                    raise bad_request(f"No compatible connection: this template needs a connection to {provider}; connect {provider} first")
            bound[provider] = connection_id
        flow = Flow(id=new_id(), name=(name or template.name).strip(), description=template.description, steps=_bind(template.steps, bound),
                    trigger={**trigger, "connectionId": connection_id} if trigger else None, status="draft", version=0,
                    template_slug=template.slug)  # fmt: skip
        session.add(flow)
        if provider and trigger.get("triggerName") and (request.app[REGISTRY].get("triggers", provider) or {}).get(trigger["triggerName"]):
            await enforce_limit(session, workspace_id, "active_triggers")
            session.add(FlowTriggerSubscription(flow_id=flow.id, provider_type=provider, trigger_name=trigger["triggerName"],
                                                kind=trigger.get("kind") or "webhook", connection_id=connection_id, config={}, is_active=True))  # fmt: skip
        await session.execute(
            update(FlowTemplate).where(FlowTemplate.id == template.id).values(clone_count=FlowTemplate.clone_count + 1).execution_options(synchronize_session=False)
        )
    return reply(request, service.flow_json(flow), status=201)


def _unbind(value: Any) -> Any:
    """Replace the workspace's connection ids in action steps by placeholders: a template never
    carries another tenant's connection."""
    if isinstance(value, list):
        return [_unbind(v) for v in value]
    if isinstance(value, dict):
        out = {k: _unbind(v) for k, v in value.items()}
        if value.get("type") == "action" and value.get("provider"):
            out["connectionId"] = f"{_PLACEHOLDER}{value['provider']}"
        return out
    return value


def _slugify(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:80] or "flow"


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
    visibility = body.get("visibility", "private")
    category = body.get("category", "custom")
    workspace_id = principal_of(request).workspace_id
    async with request.app[DB].transaction(tenant=workspace_id) as session:
        flow = await service.get_flow(session, request.match_info["flowId"])
        template = await session.scalar(select(FlowTemplate).where(FlowTemplate.source_flow_id == flow.id, FlowTemplate.workspace_id == workspace_id))
        created = template is None
        if created:
            template = FlowTemplate(slug=f"{_slugify(flow.name)}-{new_id()[:8]}", workspace_id=workspace_id, source_flow_id=flow.id, is_system=False, clone_count=0)
            session.add(template)
        steps = _unbind(flow.steps or [])
        trigger = {k: v for k, v in (flow.trigger or {}).items() if k != "connectionId"} or None
        template.name, template.description, template.category = flow.name, flow.description or "", category
        template.trigger, template.steps, template.visibility = trigger, steps, "private" if visibility == "private" else "pending_review"
        template.providers = sorted({s["provider"] for s in steps if isinstance(s, dict) and s.get("type") == "action" and s.get("provider")})
    return reply(request, template_json(template), status=201)


def system_templates(registry) -> list[dict]:
    """The packs' templates (``register_flow_templates``) whose providers are all installed."""
    return [t for t in registry.objects("flow_templates").values() if providers_of_template(t) <= registry.providers.keys()]


async def seed_system_templates(app: web.Application) -> AsyncIterator[None]:
    """Insert the system templates that are missing (concurrent starts insert each once)."""
    insert = postgresql.insert if app[DB].is_postgres else sqlite.insert
    now = utcnow()
    rows = [{"id": new_id(), "visibility": "public", "is_system": True, "workspace_id": None, "clone_count": 0, "created_at": now, "updated_at": now, **t}
            for t in system_templates(app[REGISTRY])]  # fmt: skip
    if rows:
        async with app[DB].transaction() as session:
            await session.execute(insert(FlowTemplate).values(rows).on_conflict_do_nothing(index_elements=["slug"]))
    yield


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
    app.cleanup_ctx.append(seed_system_templates)
