from patchbay.core.appkeys import SETTINGS


async def test_code_flow_end_to_end(idp):
    client = await idp.register()
    tokens = await idp.tokens(client, scope="openid profile email offline_access organization permissions", nonce="n-1")
    assert tokens["token_type"] == "Bearer"
    assert {"access_token", "id_token", "refresh_token", "expires_in", "scope"} <= set(tokens)
    info = await idp.http.get("/api/v1/oidc/userinfo", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert info.status == 200, await info.text()
    body = await info.json()
    assert body["email"] == "ada@example.com"
    assert body["organization_id"] == idp.workspace["workspace_id"]
    assert idp.app[SETTINGS].resolved_issuer
