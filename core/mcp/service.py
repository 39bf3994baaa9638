"""The MCP server of a set of services: the official SDK's low-level ``Server`` (protocol types,
initialize handshake, version negotiation, JSON-RPC dispatch) run by its
``StreamableHTTPSessionManager`` in stateless mode, which ``core.mcp.http`` feeds from aiohttp.

Why stateless: ``patchbay serve`` may run several processes behind one port, and every request
carries its own access token anyway; a stateless server needs no sticky sessions and no session
store, and its sessions cannot be taken over with another token. Responses are SSE streams (the
SDK's default), so a call waiting for an approver keeps its connection alive with the stream's
pings.

The handlers find the caller (:class:`core.mcp.access.McpAccess`, authenticated by the HTTP
layer before the SDK sees the request) in the ASGI scope of the request the SDK hands them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import attrs
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from patchbay.core.errors import Unauthenticated
from patchbay.core.mcp.access import McpAccess
from patchbay.core.mcp.calls import ToolOutcome, call_tool
from patchbay.core.mcp.tools import AgentTool, catalog_of, tools_of

if TYPE_CHECKING:
    from patchbay.core.services import Services

#: the ASGI scope key under which the HTTP layer puts the caller's :class:`McpAccess`
ACCESS_SCOPE_KEY = "patchbay.mcp_access"
SEARCH_TOOLS, CALL_TOOL = "search_tools", "call_tool"
SEARCH_LIMIT = 20
INSTRUCTIONS = "Tools of a patchbay workspace: the actions and API proxy of the connections this token was granted, published flows and the workspace's tables."


@attrs.define
class McpRuntime:
    """The SDK server and its session manager, opened with the services (``running``)."""

    server: Server[Any]
    manager: StreamableHTTPSessionManager


def install(services: Services) -> None:
    server = build_server(services)
    # DNS-rebinding protection is off: every request needs a bearer token, which a browser page
    # on another origin cannot add; the Host names a deployment answers to are the operator's.
    manager = StreamableHTTPSessionManager(server, stateless=True, json_response=False)
    services.mcp = McpRuntime(server=server, manager=manager)
    services.add_resource(_running)


@contextlib.asynccontextmanager
async def _running(services: Services) -> AsyncIterator[None]:
    """Run the session manager in a task of its own: its anyio task group must be entered and left
    by one task, and an application's start and cleanup may run in different tasks."""
    started, stop = asyncio.Event(), asyncio.Event()

    async def run() -> None:
        async with services.mcp.manager.run():
            started.set()
            await stop.wait()

    task = asyncio.create_task(run(), name="patchbay-mcp")
    waiting = asyncio.create_task(started.wait())
    await asyncio.wait([task, waiting], return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiting.cancel()
        task.result()  # raises what stopped the manager from starting
    try:
        yield
    finally:
        stop.set()
        await task


def access_of(ctx: Any) -> McpAccess:
    request = getattr(ctx, "request", None)
    access = request.scope.get(ACCESS_SCOPE_KEY) if request is not None else None
    if not isinstance(access, McpAccess):  # the HTTP layer always sets it; never serve without
        raise Unauthenticated("no MCP access on this request")
    return access


def tool_type(tool: AgentTool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        annotations=types.ToolAnnotations(read_only_hint=tool.read_only or None),
    )


def _search_pair() -> list[types.Tool]:
    return [
        types.Tool(
            name=SEARCH_TOOLS,
            description="Find the tools of this workspace that match words (an action, a provider, a flow or a table); "
            "answers their names, descriptions and input schemas. Call one with call_tool.",
            input_schema={
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 100}},
                "required": ["query"],
            },
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(
            name=CALL_TOOL,
            description="Call a tool found with search_tools by its name, with its arguments.",
            input_schema={"type": "object", "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}}, "required": ["name"]},
        ),
    ]


def search(tools: list[AgentTool], query: str, limit: int) -> list[dict[str, Any]]:
    """The tools whose name or description holds the most of the query's words."""
    words = [word for word in re.split(r"[^a-z0-9]+", query.lower()) if word]
    scored = []
    for position, tool in enumerate(tools):
        text = f"{tool.name} {tool.description}".lower()
        score = sum(text.count(word) for word in words) + sum(3 for word in words if word in tool.name.lower())
        if score or not words:
            scored.append((-score, position, tool))
    return [{"name": t.name, "description": t.description, "inputSchema": t.input_schema} for _, _, t in sorted(scored)[:limit]]


def result_of(outcome: ToolOutcome) -> types.CallToolResult:
    """A tool result: the value as JSON text and (an object) as structured content; an error
    with its message first."""
    value = outcome.value
    structured = value if isinstance(value, dict) else ({"result": value} if value is not None else None)
    text = json.dumps(value, default=str, ensure_ascii=False) if value is not None else ""
    content = []
    if outcome.error is not None:
        content.append(types.TextContent(text=outcome.error))
    if text and (outcome.error is None or value is not None):
        content.append(types.TextContent(text=text))
    return types.CallToolResult(content=content or [types.TextContent(text="")], structured_content=structured, is_error=outcome.is_error)


def build_server(services: Services) -> Server[Any]:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools = await tools_of(services, access_of(ctx))
        if len(tools) > services.settings.mcp.max_listed_tools:
            return types.ListToolsResult(tools=_search_pair())
        return types.ListToolsResult(tools=[tool_type(tool) for tool in tools])

    async def call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        access = access_of(ctx)
        name, arguments = params.name, dict(params.arguments or {})
        catalog = await catalog_of(services, access, name=None if name in (SEARCH_TOOLS, CALL_TOOL) else name)
        if name in (SEARCH_TOOLS, CALL_TOOL) and len(catalog.tools) > services.settings.mcp.max_listed_tools:
            if name == SEARCH_TOOLS:
                query, limit = arguments.get("query"), arguments.get("limit", SEARCH_LIMIT)
                if not isinstance(query, str) or not isinstance(limit, int) or not 1 <= limit <= 100:
                    return result_of(ToolOutcome(error="arguments: query (a string) is required; limit is 1 to 100"))
                return result_of(ToolOutcome(value={"tools": search(catalog.tools, query, limit)}))
            name, arguments = arguments.get("name"), arguments.get("arguments") or {}
            if not isinstance(name, str) or not isinstance(arguments, dict):
                return result_of(ToolOutcome(error="arguments: name (a string) is required; arguments is an object"))
            catalog = await catalog_of(services, access, name=name)
        tool = next((tool for tool in catalog.tools if tool.name == name), None)
        if tool is None:
            return result_of(ToolOutcome(error=f"Unknown tool: {name}. The token's grant has no such tool (list the tools again)."))
        return result_of(await call_tool(services, access, tool, arguments, needs_approval=catalog.needs_approval(tool)))

    return Server("patchbay", version="1", instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call)
