"""Server-to-server agent sessions, approvals of tool calls, and the audit of tool calls."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from sqlalchemy import select

from patchbay.core.approvals.models import ApprovalRequest
from patchbay.core.jobs.models import Job
from patchbay.testing import add_connection, create_workspace_with_key

pytestmark = pytest.mark.both_databases


async def _session(mcp_app, setup, **body):
    response = await mcp_app.post(
        "/connect/v1/agent-sessions", json={"endUserId": "eu-7", "connectionIds": [setup["connection_id"]], **body}, headers=setup["headers"]
    )
    return response.status, await response.json()


async def test_an_agent_session_gives_a_short_lived_scoped_token(mcp_app, setup, mcp_session):
    status, created = await _session(mcp_app, setup, tools=["acme__get_item"], expiresInSeconds=120)
    assert status == 201 and created["mcpUrl"].endswith("/mcp") and created["grantId"].startswith("agr_") and created["expiresAt"]
    async with mcp_session(setup["url"], created["token"]) as session:
        assert [tool.name for tool in (await session.list_tools()).tools] == ["acme__get_item"]
    revoked = await mcp_app.delete(f"/connect/v1/agent-sessions/{created['grantId']}", headers=setup["headers"])
    assert revoked.status == 204
    refused = await mcp_app.post("/mcp", json={}, headers={"Authorization": f"Bearer {created['token']}", "Accept": "application/json, text/event-stream"})
    assert refused.status == 401


async def test_an_agent_session_names_only_the_workspace_connections(mcp_app, setup):
    other = await create_workspace_with_key(setup["services"], name="Other")
    foreign = await add_connection(setup["services"], other["workspace_id"], "acme")
    status, body = await _session(mcp_app, setup, connectionIds=[foreign])
    assert status == 400 and foreign in body["message"]
    for bad in ({"endUserId": ""}, {"connectionIds": []}, {"expiresInSeconds": 10**9}, {"connectionIds": "abc"}):
        status, body = await _session(mcp_app, setup, **bad)
        assert status == 400, (bad, body)
    no_key = await mcp_app.post("/connect/v1/agent-sessions", json={"endUserId": "x", "connectionIds": [setup["connection_id"]]})
    assert no_key.status == 401


async def test_a_tool_needing_approval_waits_for_the_approver(mcp_app, setup, mcp_session, acme):
    policy = await mcp_app.put("/connect/v1/agents/policy", json={"approvalTools": ["acme.create_item"]}, headers=setup["headers"])
    assert policy.status == 200 and (await policy.json())["approvalTools"] == ["acme.create_item"]
    async with mcp_session(setup["url"], setup["token"]) as session:
        call = asyncio.create_task(session.call_tool("acme__create_item", {"name": "needs a yes"}))
        pending = await _wait_for_pending(mcp_app, setup)
        assert not call.done() and not any(r.method == "POST" for r in acme.requests)
        assert pending["kind"] == "agent_tool" and pending["metadata"]["tool"] == "acme__create_item" and pending["metadata"]["endUserId"] == "eu-1"
        approved = await mcp_app.post(f"/connect/v1/approvals/{pending['id']}/approve", json={}, headers=setup["headers"])
        assert approved.status in (200, 201)
        result = await asyncio.wait_for(call, 30)
        assert not result.is_error and result.structured_content["name"] == "needs a yes"

        call = asyncio.create_task(session.call_tool("acme__create_item", {"name": "needs a no"}))
        pending = await _wait_for_pending(mcp_app, setup)
        denied = await mcp_app.post(f"/connect/v1/approvals/{pending['id']}/deny", json={"note": "not today"}, headers=setup["headers"])
        assert denied.status in (200, 201)
        result = await asyncio.wait_for(call, 30)
        assert result.is_error and "not today" in result.content[0].text
    async with setup["services"].db.session() as db:
        told = (await db.scalars(select(Job).where(Job.kind == "alerts.operator_event"))).all()
    assert [job.payload["alert"]["event"] for job in told] == ["agent.approval_requested"] * 2


async def test_an_unanswered_approval_expires(mcp_app, setup, mcp_session):
    setup["services"].settings.mcp.approval_timeout_seconds = 0
    await mcp_app.put("/connect/v1/agents/policy", json={"approvalTools": ["acme__get_item"]}, headers=setup["headers"])
    async with mcp_session(setup["url"], setup["token"]) as session:
        result = await session.call_tool("acme__get_item", {"id": "it_1"})
    assert result.is_error and "expired" in result.content[0].text


async def _wait_for_pending(mcp_app, setup, timeout: float = 20.0) -> dict:
    async def poll() -> dict:
        while True:
            response = await mcp_app.get("/connect/v1/approvals/pending", headers=setup["headers"])
            data = (await response.json())["data"]
            if data:
                return data[0]
            await asyncio.sleep(0.05)

    return await asyncio.wait_for(poll(), timeout)


async def test_tool_calls_land_in_the_proxy_audit_with_client_and_user(mcp_app, setup, mcp_session):
    async with mcp_session(setup["url"], setup["token"]) as session:
        await session.call_tool("acme__get_item", {"id": "it_1"})
        await session.call_tool("acme__proxy", {"method": "GET", "path": "/items/missing"})
    await setup["services"].connections.audit.flush()
    response = await mcp_app.get(f"/connect/v1/connections/{setup['connection_id']}/audit", headers=setup["headers"])
    rows = (await response.json())["data"]
    tool_rows = {row["path"]: row for row in rows if row["method"] == "TOOL"}
    assert tool_rows["acme__get_item"]["clientId"] == "test-agent" and tool_rows["acme__get_item"]["userId"] == "end_user:eu-1"
    assert tool_rows["acme__get_item"]["status"] == 200 and tool_rows["acme__proxy"]["status"] == 404
    assert any(row["source"] == "mcp" and row["method"] == "GET" and row["path"] == "/items/missing" for row in rows)


async def test_a_call_abandoned_while_it_waits_cancels_its_approval_request(mcp_app, setup, acme):
    """The agent disconnects while its call waits: the request is denied as cancelled, and a later
    approval runs nothing."""
    await mcp_app.put("/connect/v1/agents/policy", json={"approvalTools": ["acme.create_item"]}, headers=setup["headers"])
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "acme__create_item", "arguments": {"name": "abandoned"}}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-11-25",
        "Authorization": f"Bearer {setup['token']}",
    }
    async with aiohttp.ClientSession() as http:
        response = await http.post(setup["url"], json=call, headers=headers)
        assert response.status == 200, await response.text()
        pending = await _wait_for_pending(mcp_app, setup)
        response.close()  # the agent goes away, its call unanswered

    async def decided() -> ApprovalRequest:
        while True:
            async with setup["services"].db.session() as db:
                row = await db.get(ApprovalRequest, pending["id"])
            if row.status != "pending":
                return row
            await asyncio.sleep(0.05)

    row = await asyncio.wait_for(decided(), 20)
    assert row.status == "denied" and row.decision_note.startswith("cancelled")
    approved = await mcp_app.post(f"/connect/v1/approvals/{pending['id']}/approve", json={}, headers=setup["headers"])
    assert approved.status == 409, (approved.status, await approved.text())
    assert not any(request.method == "POST" for request in acme.requests)
