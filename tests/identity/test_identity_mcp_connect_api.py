"""Attack: an agent's access token (``resource`` = the MCP server, RFC 8707) used where the user's own
tokens work. Even when the agent is a first-party client, whose user tokens open the connect API,
the token is for ``/mcp`` only: the connect API and userinfo refuse it."""

from __future__ import annotations

from tests.identity.mcp_flow import add_connection, agent_tokens, claims_of, resource_of

OPERATOR_SCOPE = "openid profile email organization permissions offline_access mcp"


async def test_an_mcp_token_does_not_open_the_connect_api(idp):
    await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.operator_client("first_party", scope=OPERATOR_SCOPE)
    # the same client's own user token opens the connect API (the baseline the attack copies)
    own = await idp.tokens(client, scope="openid organization permissions")
    allowed = await idp.http.post("/connect/v1/workspaces", json={"name": "By the user"}, headers={"Authorization": f"Bearer {own['access_token']}"})
    assert allowed.status == 201, await allowed.text()

    agent = await agent_tokens(idp, client, scope="openid organization permissions mcp")
    claims = await claims_of(idp, agent["access_token"])
    assert claims["aud"] == resource_of(idp) and claims["grant_id"]
    headers = {"Authorization": f"Bearer {agent['access_token']}"}
    created = await idp.http.post("/connect/v1/workspaces", json={"name": "By the agent"}, headers=headers)
    assert created.status == 401, await created.text()
    listed = await idp.http.get("/connect/v1/connections", headers=headers)
    assert listed.status == 401, await listed.text()


async def test_userinfo_refuses_an_mcp_token(idp):
    await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.operator_client("first_party", scope=OPERATOR_SCOPE)
    agent = await agent_tokens(idp, client, scope="openid profile mcp")
    response = await idp.http.get("/api/v1/oidc/userinfo", headers={"Authorization": f"Bearer {agent['access_token']}"})
    assert response.status == 401
    assert (await response.json())["error"] == "invalid_token"
