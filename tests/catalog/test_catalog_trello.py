"""Trello's definition against a local fake of its REST API: a connection takes the Power-Up's API
key and the user's token, the health check proves them with ``GET /members/me``, and every proxied
call carries them as the ``key`` and ``token`` query parameters."""

from __future__ import annotations

from aiohttp import web

from patchbay.core.appkeys import SERVICES
from patchbay.core.testing import create_workspace_with_key

KEY, TOKEN = "power-up-key-1", "user-token-2"


def fake_trello(calls: list[tuple[str, dict[str, str]]]) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        calls.append((request.path, dict(request.query)))
        if (request.query.get("key"), request.query.get("token")) != (KEY, TOKEN):
            return web.Response(status=401, text="invalid key")
        if request.path == "/1/members/me":
            return web.json_response({"id": "5abbe4b7ddc1b351ef961414", "username": "ada"})
        return web.json_response([{"id": "board-1", "name": "Roadmap"}])

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


async def test_trello_connects_with_key_and_token_and_proxies_with_both(make_app, aiohttp_client, aiohttp_server):
    calls: list[tuple[str, dict[str, str]]] = []
    server = await aiohttp_server(fake_trello(calls))
    app = make_app(providers={"trello": {"api_base_url": str(server.make_url("/1"))}})
    api = await aiohttp_client(app)
    ws = await create_workspace_with_key(app)

    facts = await (await api.get("/connect/v1/providers/trello", headers=ws["headers"])).json()
    fields = {field["name"]: (field["required"], field["secret"]) for field in facts["connect"]["credentials"]}
    assert fields == {"apiKey": (True, True), "apiSecret": (True, True)}
    assert facts["connect"]["docsUrl"] == "https://developer.atlassian.com/cloud/trello/guides/rest-api/authorization/"

    wrong = await api.post("/connect/v1/providers/trello/connect", json={"credentials": {"apiKey": KEY, "apiSecret": "stale"}}, headers=ws["headers"])
    assert wrong.status == 400, await wrong.text()
    connected = await api.post("/connect/v1/providers/trello/connect", json={"credentials": {"apiKey": KEY, "apiSecret": TOKEN}}, headers=ws["headers"])
    assert connected.status == 201, await connected.text()
    assert calls[-1] == ("/1/members/me", {"key": KEY, "token": TOKEN})

    connection = (await connected.json())["connectionId"]
    proxied = await api.post(
        "/connect/v1/proxy/trello", json={"method": "GET", "path": "/members/me/boards"}, headers={**ws["headers"], "x-connection-id": connection}
    )
    assert proxied.status == 200, await proxied.text()
    assert await proxied.json() == [{"id": "board-1", "name": "Roadmap"}]
    assert calls[-1] == ("/1/members/me/boards", {"key": KEY, "token": TOKEN})
    assert app[SERVICES].registry.provider("trello").credential_query == {"key": "{api_key}", "token": "{api_secret}"}
