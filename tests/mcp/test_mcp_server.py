"""``/mcp`` driven by the official ``mcp`` Python client: tools derived from the grant, an action
and the proxy tool against a local fake provider, tool errors with the provider's message."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.both_databases


async def test_lists_the_granted_connection_tools(setup, mcp_session):
    async with mcp_session(setup["url"], setup["token"]) as session:
        assert session.initialize_result.protocol_version == "2025-11-25"
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == {"acme__create_item", "acme__get_item", "acme__proxy"}
    assert tools["acme__create_item"].input_schema["required"] == ["name"]


async def test_calls_an_action_with_structured_output(setup, acme, mcp_session):
    async with mcp_session(setup["url"], setup["token"]) as session:
        result = await session.call_tool("acme__create_item", {"name": "widget"})
    assert not result.is_error
    assert result.structured_content == {"id": "it_1", "name": "widget"}
    assert acme.requests[-1].headers["Authorization"] == "Bearer secret-1"


async def test_a_provider_error_is_a_tool_error_with_its_message(setup, mcp_session):
    async with mcp_session(setup["url"], setup["token"]) as session:
        result = await session.call_tool("acme__get_item", {"id": "missing"})
        invalid = await session.call_tool("acme__create_item", {})
    assert result.is_error and "no item missing" in result.content[0].text
    assert invalid.is_error and "name is required" in invalid.content[0].text


async def test_calls_the_proxy_tool(setup, acme, mcp_session):
    async with mcp_session(setup["url"], setup["token"]) as session:
        result = await session.call_tool("acme__proxy", {"method": "GET", "path": "/items/it_1", "query": {"full": True}})
        missing = await session.call_tool("acme__proxy", {"method": "GET", "path": "/items/missing"})
        elsewhere = await session.call_tool("acme__proxy", {"method": "GET", "path": "http://127.0.0.1:1/steal"})
    assert not result.is_error and result.structured_content["status"] == 200 and result.structured_content["body"] == {"id": "it_1", "name": "first"}
    assert acme.requests[-2].query == {"full": "true"} and acme.requests[-2].headers["Authorization"] == "Bearer secret-1"
    assert missing.is_error and "404" in missing.content[0].text and "no item missing" in missing.content[0].text
    assert elsewhere.is_error and "must stay on the provider's API host" in elsewhere.content[0].text


async def test_the_sessionless_2026_candidate_is_served_too(setup):
    """The SDK's client pinned to the 2026-07-28 revision (no initialize, no session): the same tools."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {setup['token']}"}, timeout=30) as http:
        async with Client(streamable_http_client(setup["url"], http_client=http), mode="2026-07-28") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("acme__get_item", {"id": "it_1"})
    assert names == {"acme__create_item", "acme__get_item", "acme__proxy"}
    assert not result.is_error and result.structured_content == {"id": "it_1", "name": "first"}
