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
    assert await response.json() == {
        "statusCode": 401,
        "message": "Unauthorized: no credential was sent; send a workspace API key as `x-api-key: <key>`, "
        "or an access token of this deployment's identity provider as `Authorization: Bearer <token>`",
    }


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


async def test_malformed_json_and_validation_errors_are_400_naming_the_field(aiohttp_client, make_app):
    import dataclasses

    from aiohttp import web

    from patchbay.core.http.bodies import read_body

    @dataclasses.dataclass
    class Body:
        name: str
        count: int

    async def handler(request):
        body = await read_body(request, Body)
        return web.json_response({"name": body.name})

    app = make_app()  # its request pipeline answers the errors
    app.router.add_post("/things", handler)
    client = await aiohttp_client(app)
    malformed = await client.post("/things", data="{not json", headers={"Content-Type": "application/json"})
    assert malformed.status == 400 and await malformed.json() == {"statusCode": 400, "message": "Malformed JSON body"}
    invalid = await client.post("/things", json={"name": "x", "count": "many"})
    body = await invalid.json()
    assert invalid.status == 400 and body["statusCode"] == 400 and "count" in body["message"]
    missing = await client.post("/things", json={"count": 1})
    assert missing.status == 400 and "name" in (await missing.json())["message"]


async def test_unhandled_error_is_500_without_a_stack_trace(aiohttp_client, make_app):
    async def broken(request):
        raise RuntimeError("database password is hunter2")

    app = make_app()
    app.router.add_get("/broken", broken)
    response = await (await aiohttp_client(app)).get("/broken")
    assert response.status == 500
    assert await response.json() == {"statusCode": 500, "message": "Internal Server Error"}


async def test_health_reports_an_unreachable_database(aiohttp_client, make_app, tmp_path):
    app = make_app()
    client = await aiohttp_client(app)
    from patchbay.core.appkeys import SERVICES

    await app[SERVICES].db.engine.dispose()
    from sqlalchemy.ext.asyncio import create_async_engine

    app[SERVICES].db.engine = create_async_engine("postgresql+asyncpg://nobody@127.0.0.1:1/none")
    app[SERVICES].db._sessions.configure(bind=app[SERVICES].db.engine)
    response = await client.get("/health")
    assert response.status == 503 and (await response.json())["status"] == "error"


async def test_an_error_format_belongs_to_the_app_that_registered_it(aiohttp_client, make_app):
    from aiohttp import web

    from patchbay.core.http.errors import register_error_format

    def plain(status, message, _request):
        return web.Response(status=status, text=f"{status} {message}")

    apps = [make_app() for _ in range(2)]
    register_error_format(apps[0], "/x/", plain)
    clients = [await aiohttp_client(app) for app in apps]
    assert await (await clients[0].get("/x/missing")).text() == "404 Not Found"
    assert await (await clients[1].get("/x/missing")).json() == {"statusCode": 404, "message": "Not Found"}
