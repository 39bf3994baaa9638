"""A user's access token that lacks the ``organization`` or ``permissions`` scope is refused with a
message that names the scope to request (docs/identity.md)."""

from __future__ import annotations

from patchbay.core.testing import create_workspace_with_key, sign_access_token


async def test_a_token_without_the_permissions_scope_names_it(client):
    app = client.server.app
    workspace = await create_workspace_with_key(app)
    token = await sign_access_token(app, {"sub": "user-1", "grant_id": None, "organization_id": workspace["workspace_id"], "scope": "openid organization"})
    response = await client.get("/connect/v1/connections", headers={"Authorization": f"Bearer {token}"})
    assert response.status == 403
    assert (await response.json())["message"] == (
        "Missing permission: connections.view (the access token carries no permissions: request the `permissions` scope)"
    )


async def test_a_token_without_the_organization_scope_names_it(client):
    app = client.server.app
    token = await sign_access_token(app, {"sub": "user-1", "grant_id": None, "permissions": ["connections.view"], "scope": "openid permissions"})
    response = await client.get("/connect/v1/connections", headers={"Authorization": f"Bearer {token}"})
    assert response.status == 401
    assert "request the `organization` scope" in (await response.json())["message"]


async def test_a_token_with_both_scopes_but_too_few_permissions_says_only_which(client):
    app = client.server.app
    workspace = await create_workspace_with_key(app)
    token = await sign_access_token(app, {"sub": "user-1", "grant_id": None, "organization_id": workspace["workspace_id"], "permissions": ["flows.view"]})
    response = await client.get("/connect/v1/connections", headers={"Authorization": f"Bearer {token}"})
    assert response.status == 403 and (await response.json())["message"] == "Missing permission: connections.view"
