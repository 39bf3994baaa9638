"""Flows whose trigger is manual/mcp and the workspace's tables as tools; past
``[mcp] max_listed_tools`` the list is ``search_tools`` and ``call_tool``."""

from __future__ import annotations

import pytest

from patchbay.core.flows.service import create_flow, publish_flow
from patchbay.core.tables.service import add_table

pytestmark = pytest.mark.both_databases


async def _flow(services, workspace_id: str, name: str, kind: str | None, publish: bool = True) -> str:
    body = {
        "name": name,
        "steps": [{"id": "greet", "type": "transform", "output": "hello {{ trigger.who }}"}],
        "trigger": {"kind": kind, "inputSchema": {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}} if kind else None,
    }
    flow, _ = await create_flow(services, workspace_id=workspace_id, body=body)
    if publish:
        await publish_flow(services, workspace_id=workspace_id, flow_id=flow.id)
    return flow.id


async def test_a_published_mcp_flow_is_a_tool_and_runs(setup, mcp_session):
    services, workspace_id = setup["services"], setup["workspace_id"]
    await _flow(services, workspace_id, "Greeter", "mcp")
    await _flow(services, workspace_id, "Draft greeter", "manual", publish=False)
    await _flow(services, workspace_id, "On webhook", "webhook")
    async with mcp_session(setup["url"], setup["token"]) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert "flow__greeter" in tools and not any("draft" in name or "webhook" in name for name in tools)
        assert tools["flow__greeter"].input_schema["required"] == ["who"]
        result = await session.call_tool("flow__greeter", {"who": "agent"})
        refused = await session.call_tool("flow__greeter", {})
    assert not result.is_error, result.content
    assert result.structured_content["status"] == "completed" and result.structured_content["output"] == "hello agent"
    assert refused.is_error and "who is required" in refused.content[0].text


async def test_table_lookup_and_insert(setup, mcp_session):
    services, workspace_id = setup["services"], setup["workspace_id"]
    await add_table(services, workspace_id, name="Leads", slug="leads", columns=[{"name": "email", "type": "text"}], description=None)
    async with mcp_session(setup["url"], setup["token"]) as session:
        inserted = await session.call_tool("tables__insert", {"table": "leads", "data": {"email": "a@example.com"}, "externalKey": "a"})
        found = await session.call_tool("tables__lookup", {"table": "leads", "column": "email", "value": "a@example.com"})
        unknown = await session.call_tool("tables__lookup", {"table": "nope", "column": "email", "value": "x"})
    assert not inserted.is_error and inserted.structured_content["created"] is True
    assert found.structured_content["row"]["data"] == {"email": "a@example.com"}
    assert unknown.is_error


async def test_past_the_limit_the_list_is_search_and_call(setup, mcp_session):
    setup["services"].settings.mcp.max_listed_tools = 2
    async with mcp_session(setup["url"], setup["token"]) as session:
        names = [tool.name for tool in (await session.list_tools()).tools]
        found = await session.call_tool("search_tools", {"query": "create item"})
        called = await session.call_tool("call_tool", {"name": "acme__create_item", "arguments": {"name": "via search"}})
    assert names == ["search_tools", "call_tool"]
    assert found.structured_content["tools"][0]["name"] == "acme__create_item"
    assert not called.is_error and called.structured_content["name"] == "via search"
