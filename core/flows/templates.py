"""Flow templates (spec 4.9, 2.6): the system set seeded at start, the templates a workspace sees
(system, public and its own, most cloned first), cloning into a draft flow bound to compatible
connections (monthly cap of 8A), and sharing a flow as a template."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from patchbay.core.billing.limits import consume, enforce_limit
from patchbay.core.connections.models import Connection
from patchbay.core.errors import Invalid, NotFound
from patchbay.core.flows.models import Flow, FlowTemplate, FlowTriggerSubscription
from patchbay.core.flows.service import get_flow
from patchbay.core.flows.template_builders import providers_of_template
from patchbay.core.timeutil import iso, new_id, utcnow

if TYPE_CHECKING:
    from patchbay.core.services import Services

VISIBILITIES = ("private", "public", "pending_review")
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


async def _template(session: AsyncSession, slug: str, workspace_id: str) -> FlowTemplate:
    template = await session.scalar(select(FlowTemplate).where(FlowTemplate.slug == slug, _visible(workspace_id)))
    if template is None:
        raise NotFound(f"Template not found: {slug}")
    return template


async def list_templates(services: Services, *, workspace_id: str, category: str | None = None) -> list[FlowTemplate]:
    """The templates the workspace sees, most cloned first (of ``category`` when given)."""
    statement = select(FlowTemplate).where(_visible(workspace_id))
    if category:
        statement = statement.where(FlowTemplate.category == category)
    async with services.db.session() as session:
        return list((await session.scalars(statement.order_by(FlowTemplate.clone_count.desc(), FlowTemplate.is_system.desc(), FlowTemplate.slug))).all())


async def get_template(services: Services, *, workspace_id: str, slug: str) -> FlowTemplate:
    async with services.db.session() as session:
        return await _template(session, slug, workspace_id)


def _bind(value: Any, connections: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _bind(v, connections) for k, v in value.items()}
    if isinstance(value, list):
        return [_bind(v, connections) for v in value]
    if isinstance(value, str) and value.startswith(_PLACEHOLDER):
        return connections.get(value[len(_PLACEHOLDER) :], value)
    return value


async def clone(services: Services, *, workspace_id: str, slug: str, name: Any = None, trigger_connection_id: str | None = None) -> Flow:
    """A draft flow from the template, its trigger bound to ``trigger_connection_id`` (or the
    workspace's connection to the trigger's provider) and its action steps to the workspace's
    connections; counted against the monthly ``template_clones``."""
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise Invalid("name must be a non-empty string")
    async with services.db.transaction(tenant=workspace_id) as session:
        template = await _template(session, slug, workspace_id)
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
                    raise Invalid("triggerConnectionId: no such connection in this workspace")
                if match.provider != provider:
                    raise Invalid(f"triggerConnectionId: the template's trigger needs a {provider} connection, not {match.provider}")
                connection_id = match.id
            else:
                connection_id = bound.get(provider)
                if connection_id is None:
                    raise Invalid(f"No compatible connection: this template needs a connection to {provider}; connect {provider} first")
            bound[provider] = connection_id
        flow = Flow(
            id=new_id(),
            name=(name or template.name).strip(),
            description=template.description,
            steps=_bind(template.steps, bound),
            trigger={**trigger, "connectionId": connection_id} if trigger else None,
            status="draft",
            version=0,
            template_slug=template.slug,
        )
        session.add(flow)
        if provider and trigger.get("triggerName") and (services.registry.get("triggers", provider) or {}).get(trigger["triggerName"]):
            await enforce_limit(session, workspace_id, "active_triggers")
            session.add(
                FlowTriggerSubscription(
                    flow_id=flow.id,
                    provider_type=provider,
                    trigger_name=trigger["triggerName"],
                    kind=trigger.get("kind") or "webhook",
                    connection_id=connection_id,
                    config={},
                    is_active=True,
                )
            )
        await session.execute(
            update(FlowTemplate)
            .where(FlowTemplate.id == template.id)
            .values(clone_count=FlowTemplate.clone_count + 1)
            .execution_options(synchronize_session=False)
        )
    return flow


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


async def publish_flow(services: Services, *, workspace_id: str, flow_id: str, visibility: Any = "private", category: Any = "custom") -> FlowTemplate:
    """Share the flow as a template (the same flow again updates its template). ``public`` is a
    request: the template is ``pending_review`` (seen by its workspace only) until an operator
    approves it (``template_review``); republishing a public template sends it back to review."""
    if visibility not in VISIBILITIES:
        raise Invalid(f"visibility must be one of {', '.join(VISIBILITIES)}")
    if not isinstance(category, str) or not category:
        raise Invalid("category must be a string")
    async with services.db.transaction(tenant=workspace_id) as session:
        flow = await get_flow(session, flow_id)
        template = await session.scalar(select(FlowTemplate).where(FlowTemplate.source_flow_id == flow.id, FlowTemplate.workspace_id == workspace_id))
        if template is None:
            template = FlowTemplate(
                slug=f"{_slugify(flow.name)}-{new_id()[:8]}", workspace_id=workspace_id, source_flow_id=flow.id, is_system=False, clone_count=0
            )
            session.add(template)
        steps = _unbind(flow.steps or [])
        trigger = {k: v for k, v in (flow.trigger or {}).items() if k != "connectionId"} or None
        template.name, template.description, template.category = flow.name, flow.description or "", category
        template.trigger, template.steps, template.visibility = trigger, steps, "private" if visibility == "private" else "pending_review"
        template.providers = sorted({s["provider"] for s in steps if isinstance(s, dict) and s.get("type") == "action" and s.get("provider")})
    return template


def system_templates(registry) -> list[dict]:
    """The packs' templates (``register_flow_templates``) whose providers are all installed."""
    return [t for t in registry.objects("flow_templates").values() if providers_of_template(t) <= registry.providers.keys()]


@asynccontextmanager
async def seeded_system_templates(services: Services) -> AsyncIterator[None]:
    """A resource of the services: insert the system templates that are missing when they start
    (concurrent starts insert each once)."""
    insert = postgresql.insert if services.db.is_postgres else sqlite.insert
    now = utcnow()
    rows = [
        {"id": new_id(), "visibility": "public", "is_system": True, "workspace_id": None, "clone_count": 0, "created_at": now, "updated_at": now, **t}
        for t in system_templates(services.registry)
    ]
    if rows:
        async with services.db.transaction() as session:
            await session.execute(insert(FlowTemplate).values(rows).on_conflict_do_nothing(index_elements=["slug"]))
    yield
