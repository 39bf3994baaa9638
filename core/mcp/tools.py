"""The tools a grant gives, derived from the registry and the workspace at call time, so a revoked
grant, a deleted connection, an unpublished flow or a dropped table is gone on the next request.

Names (at most 64 characters of ``[A-Za-z0-9_-]``, what every client accepts):

- ``{provider}__{action}``: each action of each granted connection's provider; ``inputSchema`` is
  the action's JSON Schema;
- ``{provider}__proxy``: any call to the provider's API through the proxy (``method``, ``path``,
  ``query``, ``body``), held to the provider's base URL;
- ``flow__{name}``: each published flow whose trigger is ``{"kind": "manual" | "mcp"}``, with the
  trigger's ``inputSchema`` (any object when it has none);
- ``tables__lookup`` and ``tables__insert``: the workspace's tables.

When a grant holds two connections to one provider, its tools are ``{provider}_{id prefix}__...``.
A grant's ``tools`` (when set) keeps only the tools it names.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

import attrs
from sqlalchemy import select

from patchbay.core.flows.models import Flow
from patchbay.core.flows.service import is_live
from patchbay.core.tables.models import DataTable

if TYPE_CHECKING:
    from patchbay.core.mcp.access import McpAccess
    from patchbay.core.services import Services

#: flow trigger kinds that make a published flow a tool
FLOW_TRIGGER_KINDS = ("manual", "mcp")
PROXY_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")

PROXY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "method": {"type": "string", "enum": list(PROXY_METHODS)},
        "path": {"type": "string", "description": "Path under the provider's API base URL, e.g. /v1/contacts"},
        "query": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
        "body": {"description": "JSON body of the request"},
    },
    "required": ["method", "path"],
    "additionalProperties": False,
}


@attrs.frozen
class AgentTool:
    """One tool: what the client sees (name, description, input schema) and what it runs."""

    name: str
    description: str
    input_schema: dict[str, Any]
    #: action | proxy | flow | table_lookup | table_insert
    kind: str
    connection_id: str | None = None
    provider: str | None = None
    #: the action's name (kind action) or the flow's id (kind flow)
    target: str | None = None
    read_only: bool = False

    @property
    def action_id(self) -> str | None:
        """``provider.action`` of an action tool (how an approval policy may name it too)."""
        return f"{self.provider}.{self.target}" if self.kind == "action" else None


def safe_name(text: str) -> str:
    return _UNSAFE.sub("_", text).strip("_")[:MAX_NAME] or "x"


def _object_schema(schema: Any) -> dict[str, Any]:
    """A tool's ``inputSchema`` must be an object schema (through 2025-11-25)."""
    if isinstance(schema, dict) and schema.get("type") == "object":
        return dict(schema)
    return {"type": "object", "properties": dict((schema or {}).get("properties") or {}) if isinstance(schema, dict) else {}}


def _connection_tools(services: Services, connection_id: str, provider_name: str, prefix: str) -> list[AgentTool]:
    provider = services.registry.provider(provider_name)
    title = provider.display_name if provider is not None else provider_name
    tools = []
    for action in sorted((services.registry.get("actions", provider_name) or {}).values(), key=lambda a: a.name):
        tools.append(
            AgentTool(
                name=safe_name(f"{prefix}__{action.name}"),
                description=f"{title}: {action.description or action.display_name} (connection {connection_id})",
                input_schema=_object_schema(action.inputs),
                kind="action",
                connection_id=connection_id,
                provider=provider_name,
                target=action.name,
            )
        )
    if provider is not None and provider.api_base_url:
        tools.append(
            AgentTool(
                name=safe_name(f"{prefix}__proxy"),
                description=f"Call the {title} API with the stored credentials of connection {connection_id}: "
                "any method and path under its API base URL; answers the status, content type and body.",
                input_schema=PROXY_SCHEMA,
                kind="proxy",
                connection_id=connection_id,
                provider=provider_name,
            )
        )
    return tools


def _flow_tools(flows: list[Flow]) -> list[AgentTool]:
    names = Counter(safe_name(flow.name).lower() for flow in flows)
    tools = []
    for flow in flows:
        base = safe_name(flow.name).lower()
        name = f"flow__{base}" if names[base] == 1 else f"flow__{base}_{flow.id[:8]}"
        schema = (flow.trigger or {}).get("inputSchema")
        tools.append(
            AgentTool(
                name=safe_name(name),
                description=f"Run the flow {flow.name!r}" + (f": {flow.description}" if flow.description else ""),
                input_schema=_object_schema(schema) if schema else {"type": "object"},
                kind="flow",
                target=flow.id,
            )
        )
    return tools


def _table_tools(tables: list[DataTable]) -> list[AgentTool]:
    if not tables:
        return []
    slugs = [table.slug for table in tables]
    listing = "; ".join(f"{t.slug} ({', '.join(c['name'] for c in t.columns or [])})" for t in tables)
    return [
        AgentTool(
            name="tables__lookup",
            description=f"Find the most recently updated row of a table whose column equals a value. Tables: {listing}",
            input_schema={
                "type": "object",
                "properties": {"table": {"type": "string", "enum": slugs}, "column": {"type": "string"}, "value": {}},
                "required": ["table", "column", "value"],
            },
            kind="table_lookup",
            read_only=True,
        ),
        AgentTool(
            name="tables__insert",
            description=f"Add a row to a table (or update the row with the same externalKey). Tables: {listing}",
            input_schema={
                "type": "object",
                "properties": {"table": {"type": "string", "enum": slugs}, "data": {"type": "object"}, "externalKey": {"type": "string"}},
                "required": ["table", "data"],
            },
            kind="table_insert",
        ),
    ]


@attrs.frozen
class Catalog:
    """The tools of a grant at one moment, and the names its workspace's policy sends for approval."""

    tools: list[AgentTool]
    approval_names: frozenset[str] = frozenset()

    def needs_approval(self, tool: AgentTool) -> bool:
        return tool.name in self.approval_names or (tool.action_id is not None and tool.action_id in self.approval_names)


def _may_be(name: str | None, prefix: str) -> bool:
    return name is None or name.startswith(prefix)


async def catalog_of(services: Services, access: McpAccess, *, name: str | None = None) -> Catalog:
    """Every tool the caller's grant gives now, in a stable order: the connections' tools from the
    grant's state read with the token, the flows and tables in one session, and only when ``name``
    (one tool is being called) could be theirs, so a call of a connection's tool reads nothing more."""
    state = access.state
    grant = state.grant
    flows: list[Flow] = []
    tables: list[DataTable] = []
    if _may_be(name, "flow__") or _may_be(name, "tables__"):
        async with services.db.session(tenant=grant.workspace_id) as session:
            if _may_be(name, "flow__"):
                flows = [
                    flow
                    for flow in (await session.scalars(select(Flow).where(is_live()).order_by(Flow.created_at, Flow.id))).all()
                    if isinstance(flow.trigger, dict) and flow.trigger.get("kind") in FLOW_TRIGGER_KINDS
                ]
            if _may_be(name, "tables__"):
                tables = list((await session.scalars(select(DataTable).order_by(DataTable.slug))).all())
    per_provider = Counter(provider for _, provider in state.connections)
    tools: list[AgentTool] = []
    for connection_id, provider in state.connections:
        prefix = provider if per_provider[provider] == 1 else f"{provider}_{connection_id[:8]}"
        tools += _connection_tools(services, connection_id, provider, prefix)
    tools += _flow_tools(flows)
    tools += _table_tools(tables)
    if grant.tools is not None:
        allowed = set(grant.tools)
        tools = [tool for tool in tools if tool.name in allowed or tool.action_id in allowed]
    return Catalog(tools, state.approval_names)


async def tools_of(services: Services, access: McpAccess) -> list[AgentTool]:
    """Every tool the caller's grant gives now, in a stable order."""
    return (await catalog_of(services, access)).tools
