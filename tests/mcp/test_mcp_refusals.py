"""A connect-API token on ``/mcp`` is told it is for the connect API (the reverse of the connect
API's refusal of an MCP token), with the challenge header kept."""

from patchbay.core.testing import sign_access_token

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_connect_api_token_and_missing_token_on_mcp_say_why(mcp_app, setup):
    services = setup["services"]
    resource = f"{services.settings.public_base_url}/mcp"
    connect_token = await sign_access_token(services, {"sub": "someone", "organization_id": setup["workspace_id"]})
    response = await mcp_app.post("/mcp", json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {connect_token}"})
    assert response.status == 401 and 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    assert (await response.json())["message"] == (
        f"the access token is not valid for this MCP server: it is a token for the connect API, not for this MCP server; request one with `resource={resource}`"
    )
    expired = await services.signing_keys.sign({"iss": services.settings.resolved_issuer, "aud": resource, "exp": 1000, "grant_id": setup["grant"].id})
    response = await mcp_app.post("/mcp", json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {expired}"})
    assert (await response.json())["message"].endswith("it has expired; get a new one with its refresh token or authorize again")
    response = await mcp_app.post("/mcp", json=INITIALIZE, headers={**HEADERS, "x-api-key": setup["api_key"]})
    assert response.status == 401 and response.headers["WWW-Authenticate"].startswith("Bearer resource_metadata=")
    assert (await response.json())["message"].startswith("an access token for this MCP server is required, as `Authorization: Bearer <token>`")
