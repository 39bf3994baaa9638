"""The error envelope of contract section 4 on every kind of failure."""

from patchbay.core.testing import sign_access_token


async def test_unknown_route_is_404_envelope(client):
    response = await client.get("/no/such/route")
    assert response.status == 404
    assert await response.json() == {"statusCode": 404, "message": "Not Found"}


async def test_wrong_method_is_405_envelope(client):
    response = await client.post("/health")
    assert response.status == 405
    assert await response.json() == {"statusCode": 405, "message": "Method Not Allowed"}


async def test_missing_credentials_is_401(client):
    response = await client.get("/connect/v1/providers")
    assert response.status == 401
    assert await response.json() == {"statusCode": 401, "message": "Unauthorized"}


async def test_bad_api_key_and_bad_token_are_401(client):
    for headers in ({"x-api-key": "pb_nope"}, {"Authorization": "Bearer not.a.jwt"}, {"Authorization": "garbage"}):
        response = await client.get("/connect/v1/providers", headers=headers)
        assert response.status == 401, headers


async def test_expired_token_is_401_and_valid_token_with_or_without_bearer_passes(client, workspace):
    app = client.server.app
    expired = await sign_access_token(app, {"sub": "u1", "organization_id": workspace["workspace_id"]}, lifetime=-10)
    assert (await client.get("/connect/v1/providers", headers={"Authorization": f"Bearer {expired}"})).status == 401
    token = await sign_access_token(app, {"sub": "u1", "organization_id": workspace["workspace_id"], "permissions": []})
    for header in (f"Bearer {token}", token):
        response = await client.get("/connect/v1/providers", headers={"Authorization": header})
        assert response.status == 200, await response.text()


async def test_unknown_provider_is_404_with_spec_message(client, workspace):
    response = await client.get("/connect/v1/providers/nope", headers=workspace["headers"])
    assert response.status == 404
    assert await response.json() == {"statusCode": 404, "message": "Provider not found: nope"}


async def test_request_id_is_echoed(client):
    response = await client.get("/health", headers={"X-Request-Id": "abc-123"})
    assert response.headers["X-Request-Id"] == "abc-123"
