"""The agents a user authorized: ``GET /api/v1/agent-grants`` lists them, ``DELETE
/api/v1/agent-grants/{id}`` revokes one (its user, or its workspace's admin). A revoked grant stops
the agent's next ``/mcp`` call (``core.mcp.access.authenticate`` reads the grant) and its next
refresh; nobody else can revoke or see it."""

from __future__ import annotations

import pytest

from patchbay.core.appkeys import SERVICES
from patchbay.core.errors import Unauthenticated
from patchbay.core.mcp.access import authenticate
from patchbay.core.mcp.grants import revoke_grant
from patchbay.core.testing import create_workspace_with_key, sign_access_token
from patchbay.core.users.service import create_user
from patchbay.core.workspaces.service import delete_member
from tests.identity.mcp_flow import AGENT_SCOPE, add_connection, agent_tokens, claims_of, resource_of

AGENT = {"client_name": "Claude", "token_endpoint_auth_method": "none", "scope": AGENT_SCOPE, "grant_types": ["authorization_code", "refresh_token"]}


async def user_headers(idp, user_id: str) -> dict[str, str]:
    """A signed-in user's access token (a first-party client's), as the console holds it."""
    return {"Authorization": "Bearer " + await sign_access_token(idp.app, {"sub": user_id})}


async def authorized_agent(idp) -> tuple[dict, dict, str]:
    connection = await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.register(**AGENT)
    tokens = await agent_tokens(idp, client)
    return client, tokens, connection


async def test_the_user_sees_the_agents_they_authorized(idp):
    client, tokens, connection = await authorized_agent(idp)
    grant_id = (await claims_of(idp, tokens["access_token"]))["grant_id"]
    response = await idp.http.get("/api/v1/agent-grants", headers=await user_headers(idp, idp.user["id"]))
    assert response.status == 200, await response.text()
    [grant] = (await response.json())["data"]
    assert grant["id"] == grant_id and grant["clientName"] == "Claude" and grant["clientId"] == client["client_id"]
    assert grant["workspaceId"] == idp.workspace["workspace_id"] and grant["connectionIds"] == [connection]


async def test_revoking_stops_the_next_mcp_call_and_the_next_refresh(idp):
    client, tokens, _ = await authorized_agent(idp)
    services = idp.app[SERVICES]
    bearer = "Bearer " + tokens["access_token"]
    access = await authenticate(services, bearer)  # what /mcp checks on every request
    headers = await user_headers(idp, idp.user["id"])
    response = await idp.http.delete(f"/api/v1/agent-grants/{access.grant.id}", headers=headers)
    assert response.status == 200 and await response.json() == {"success": True}
    with pytest.raises(Unauthenticated):
        await authenticate(services, bearer)
    refresh = await idp.token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"], resource=resource_of(idp))
    assert refresh.status == 400 and (await refresh.json())["error"] == "invalid_grant"
    listed = await idp.http.get("/api/v1/agent-grants", headers=headers)
    assert (await listed.json())["data"] == []


async def test_the_workspace_admin_revokes_an_agent_of_their_workspace(idp):
    _, tokens, _ = await authorized_agent(idp)
    services = idp.app[SERVICES]
    grant_id = (await claims_of(idp, tokens["access_token"]))["grant_id"]
    other = await create_workspace_with_key(idp.app, name="Elsewhere")
    refused = await idp.http.delete(f"/api/v1/agent-grants/{grant_id}", headers=other["headers"])
    assert refused.status == 404
    await authenticate(services, "Bearer " + tokens["access_token"])  # still authorized
    response = await idp.http.delete(f"/api/v1/agent-grants/{grant_id}", headers=idp.workspace["headers"])
    assert response.status == 200
    with pytest.raises(Unauthenticated):
        await authenticate(services, "Bearer " + tokens["access_token"])


async def test_nobody_else_sees_or_revokes_a_users_agents(idp):
    _, tokens, _ = await authorized_agent(idp)
    grant_id = (await claims_of(idp, tokens["access_token"]))["grant_id"]
    async with idp.app[SERVICES].db.transaction() as session:
        mallory = await create_user(session, email="mallory@example.com", password="another password!", name="Mallory")
    headers = await user_headers(idp, mallory.id)
    assert (await (await idp.http.get("/api/v1/agent-grants", headers=headers)).json())["data"] == []
    response = await idp.http.delete(f"/api/v1/agent-grants/{grant_id}", headers=headers)
    assert response.status == 404
    limited = await create_workspace_with_key(idp.app, name="Viewer key", permissions=["connections.view"])
    assert (await idp.http.delete(f"/api/v1/agent-grants/{grant_id}", headers=limited["headers"])).status == 403
    idp.http.session.cookie_jar.clear()  # the test client was Ada's browser; now nobody's
    assert (await idp.http.get("/api/v1/agent-grants")).status == 401
    assert (await idp.http.delete(f"/api/v1/agent-grants/{grant_id}")).status == 401
    await authenticate(idp.app[SERVICES], "Bearer " + tokens["access_token"])  # untouched


async def test_the_users_browser_sees_their_agents_by_the_sign_in_cookie(idp):
    _, tokens, _ = await authorized_agent(idp)  # the test client signed Ada in on the way
    grant_id = (await claims_of(idp, tokens["access_token"]))["grant_id"]
    listed = await idp.http.get("/api/v1/agent-grants")
    assert [grant["id"] for grant in (await listed.json())["data"]] == [grant_id]


async def test_the_agents_own_token_cannot_list_or_revoke_grants(idp):
    _, tokens, _ = await authorized_agent(idp)
    headers = {"Authorization": "Bearer " + tokens["access_token"]}
    assert (await idp.http.get("/api/v1/agent-grants", headers=headers)).status == 401


async def test_a_grant_revoked_on_the_mcp_side_alone_ends_the_refresh_and_introspection(idp):
    """``core.mcp.grants.revoke_grant`` (the MCP server's own routes) revokes only the agent grant:
    the identity provider reads it too."""
    await add_connection(idp.app, idp.workspace["workspace_id"])
    client = await idp.operator_client("third_party", scope="mcp offline_access")
    tokens = await agent_tokens(idp, client)
    grant_id = (await claims_of(idp, tokens["access_token"]))["grant_id"]
    await revoke_grant(idp.app[SERVICES], grant_id, workspace_id=idp.workspace["workspace_id"])
    introspected = await idp.http.post("/api/v1/oidc/introspect", data={"token": tokens["access_token"], **client})
    assert (await introspected.json()) == {"active": False}
    refresh = await idp.token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"], resource=resource_of(idp))
    assert refresh.status == 400 and (await refresh.json())["error"] == "invalid_grant"


async def test_a_member_removed_from_the_workspace_stops_their_agents(idp):
    _, tokens, _ = await authorized_agent(idp)
    services = idp.app[SERVICES]
    bearer = "Bearer " + tokens["access_token"]
    await authenticate(services, bearer)
    async with services.db.transaction() as session:
        await delete_member(session, workspace_id=idp.workspace["workspace_id"], user_id=idp.user["id"])
    with pytest.raises(Unauthenticated, match="no longer a member"):
        await authenticate(services, bearer)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = await idp.http.post("/mcp", json=call, headers={"Authorization": bearer, "Accept": "application/json, text/event-stream"})
    assert response.status == 401
