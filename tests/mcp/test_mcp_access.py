"""Who may use ``/mcp`` and what a grant reaches: attacks over HTTP first.

A connect-API credential (an API key, a connect-API access token) is refused with 401 and the
challenge naming the protected resource metadata; a tool of a connection not granted, or of
another workspace, is neither listed nor callable; a revoked grant, an expired session or a
deleted connection stops the next request."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from patchbay.core.connections.models import ProxyCallLog
from patchbay.core.connections.service import disconnect
from patchbay.core.mcp.access import mint_access_token
from patchbay.core.mcp.grants import create_grant, revoke_grant
from patchbay.core.testing import sign_access_token
from patchbay.testing import add_connection, create_workspace_with_key

pytestmark = pytest.mark.both_databases

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "attacker", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _challenge_ok(response, services) -> bool:
    expected = f'Bearer resource_metadata="{services.settings.public_base_url}/.well-known/oauth-protected-resource/mcp"'
    return response.status == 401 and response.headers.get("WWW-Authenticate", "").startswith(expected)


async def test_connect_api_credentials_are_refused_with_a_challenge(mcp_app, setup):
    services = setup["services"]
    connect_token = await sign_access_token(services, {"sub": "someone", "organization_id": setup["workspace_id"], "permissions": ["connections.write"]})
    id_like = await services.signing_keys.sign(
        {"iss": services.settings.resolved_issuer, "aud": "patchbay-testing", "exp": 2**31, "grant_id": setup["grant"].id}
    )
    for authorization in (None, f"Bearer {setup['api_key']}", f"Bearer {connect_token}", f"Bearer {id_like}", "Basic eDp5"):
        headers = {**HEADERS, **({"Authorization": authorization} if authorization else {})}
        response = await mcp_app.post("/mcp", json=INITIALIZE, headers=headers)
        assert _challenge_ok(response, services), (authorization, response.status, response.headers)
    response = await mcp_app.post("/mcp", json=INITIALIZE, headers={**HEADERS, "x-api-key": setup["api_key"]})
    assert _challenge_ok(response, services)


async def test_a_token_of_another_issuer_or_expired_is_refused(mcp_app, setup):
    services = setup["services"]
    grant = setup["grant"]
    resource = f"{services.settings.public_base_url}/mcp"
    foreign = await services.signing_keys.sign({"iss": "https://evil.example", "aud": resource, "exp": 2**31, "grant_id": grant.id})
    expired = await services.signing_keys.sign({"iss": services.settings.resolved_issuer, "aud": resource, "exp": 1000, "grant_id": grant.id})
    for token in (foreign, expired):
        response = await mcp_app.post("/mcp", json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {token}"})
        assert _challenge_ok(response, services)


async def test_tools_of_connections_not_granted_are_neither_listed_nor_callable(setup, mcp_session):
    services = setup["services"]
    other_connection = await add_connection(services, setup["workspace_id"], "acme", credentials={"api_key": "secret-2"})
    other_ws = await create_workspace_with_key(services, name="Other")
    foreign_connection = await add_connection(services, other_ws["workspace_id"], "acme", credentials={"api_key": "secret-3"})
    async with mcp_session(setup["url"], setup["token"]) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert not any(other_connection[:8] in name or foreign_connection[:8] in name for name in names)
        for name in (f"acme_{other_connection[:8]}__proxy", f"acme_{foreign_connection[:8]}__proxy", f"acme_{other_connection[:8]}__create_item"):
            result = await session.call_tool(name, {"method": "GET", "path": "/items/it_1", "name": "x"})
            assert result.is_error and "Unknown tool" in result.content[0].text
    # a grant can never name another workspace's connection
    with pytest.raises(Exception, match="connection"):
        await create_grant(services, workspace_id=setup["workspace_id"], user_id=None, client_id="c", connection_ids=[foreign_connection])


async def test_a_tool_list_in_the_grant_limits_the_tools(setup, mcp_session):
    services = setup["services"]
    grant = await create_grant(
        services, workspace_id=setup["workspace_id"], user_id=None, client_id="c", connection_ids=[setup["connection_id"]], tools=["acme.get_item"]
    )
    async with mcp_session(setup["url"], await mint_access_token(services, grant, lifetime=60)) as session:
        assert [tool.name for tool in (await session.list_tools()).tools] == ["acme__get_item"]
        refused = await session.call_tool("acme__create_item", {"name": "x"})
    assert refused.is_error and "Unknown tool" in refused.content[0].text


async def test_a_revoked_grant_stops_the_next_request(mcp_app, setup, mcp_session):
    services = setup["services"]
    async with mcp_session(setup["url"], setup["token"]) as session:
        assert not (await session.call_tool("acme__get_item", {"id": "it_1"})).is_error
        await revoke_grant(services, setup["grant"].id, workspace_id=setup["workspace_id"])
        with pytest.raises(Exception):  # noqa: B017 (the SDK's transport raises its own error for a 401)
            await session.call_tool("acme__get_item", {"id": "it_1"})
    response = await mcp_app.post("/mcp", json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {setup['token']}"})
    assert _challenge_ok(response, services)


async def test_a_deleted_connection_takes_its_tools_away(setup, mcp_session):
    services = setup["services"]
    async with mcp_session(setup["url"], setup["token"]) as session:
        assert len((await session.list_tools()).tools) == 3
        await disconnect(services, workspace_id=setup["workspace_id"], connection_id=setup["connection_id"], revoke=False, delete=True)
        assert (await session.list_tools()).tools == []
        result = await session.call_tool("acme__get_item", {"id": "it_1"})
    assert result.is_error and "Unknown tool" in result.content[0].text


async def test_tool_calls_are_limited_per_token(setup, mcp_session, whole_clock_minute):
    setup["services"].settings.mcp.tool_calls_per_token = "2/minute"
    async with mcp_session(setup["url"], setup["token"]) as session:
        answers = [await session.call_tool("acme__get_item", {"id": "it_1"}) for _ in range(3)]
    assert [answer.is_error for answer in answers] == [False, False, True]
    assert "Too many tool calls" in answers[2].content[0].text


async def test_get_and_delete_are_not_offered_by_the_stateless_server(mcp_app, setup):
    headers = {"Authorization": f"Bearer {setup['token']}", "Accept": "text/event-stream"}
    for method in ("GET", "DELETE"):
        response = await mcp_app.request(method, "/mcp", headers=headers)
        assert response.status == 405, (method, response.status, await response.text())


async def test_tool_calls_are_limited_per_connection_whichever_token_calls(setup, mcp_session, whole_clock_minute):
    services = setup["services"]
    services.settings.mcp.tool_calls_per_connection = "2/minute"
    other = await create_grant(services, workspace_id=setup["workspace_id"], user_id=None, client_id="other-agent", connection_ids=[setup["connection_id"]])
    other_token = await mint_access_token(services, other, lifetime=600)
    async with mcp_session(setup["url"], setup["token"]) as session:
        first = [await session.call_tool("acme__get_item", {"id": "it_1"}) for _ in range(2)]
    async with mcp_session(setup["url"], other_token) as session:
        refused = await session.call_tool("acme__proxy", {"method": "GET", "path": "/items/it_1"})
    assert [answer.is_error for answer in first] == [False, False]
    assert refused.is_error and "Too many tool calls for this connection" in refused.content[0].text
    await services.connections.audit.flush()
    async with services.db.session() as db:
        statuses = (await db.scalars(select(ProxyCallLog.status).where(ProxyCallLog.method == "TOOL", ProxyCallLog.path == "acme__proxy"))).all()
    assert statuses == [429]


async def test_the_plans_action_executions_limit_answers_a_tool_error(setup, mcp_session):
    setup["services"].limits.limits["enterprise"] = {**setup["services"].limits.limits["enterprise"], "action_executions": 1}
    async with mcp_session(setup["url"], setup["token"]) as session:
        answers = [await session.call_tool("acme__get_item", {"id": "it_1"}) for _ in range(2)]
    assert [answer.is_error for answer in answers] == [False, True]
    assert "Plan limit exceeded for action_executions" in answers[1].content[0].text


async def test_a_connection_tool_call_opens_one_database_session(setup, mcp_session, monkeypatch):
    """The grant, its connections and the approval list are read together with the token; the
    revoked-grant test above shows the read still happens on every request."""
    db = setup["services"].db
    opened = []
    session = db.session

    def counting(*args, **kwargs):
        opened.append(kwargs.get("tenant"))
        return session(*args, **kwargs)

    async with mcp_session(setup["url"], setup["token"]) as client:
        assert not (await client.call_tool("acme__proxy", {"method": "GET", "path": "/items/it_1"})).is_error  # caches warm
        monkeypatch.setattr(db, "session", counting)
        assert not (await client.call_tool("acme__proxy", {"method": "GET", "path": "/items/it_1"})).is_error
    assert len(opened) == 1, opened
